// Internal: `completion bash|zsh|fish`: scripts that complete the commands
// and each command's flags.

import type { Shell } from "./_plan.ts";

const COMMANDS = [
  "token",
  "quota",
  "list",
  "get",
  "sync",
  "demo",
  "cache",
  "logout",
  "completion",
];
const SESSION = [
  "--no-cache",
  "--verbose",
  "--env-file",
  "--token-body",
  "--client-authentication",
];
const FLAGS: Readonly<Record<string, readonly string[]>> = {
  token: ["--show-token", "--format", ...SESSION],
  quota: ["--format", ...SESSION],
  list: [
    "--limit",
    "--page",
    "--sort-by",
    "--sort-direction",
    "--since",
    "--max-items",
    "--concurrency",
    "--query",
    "--format",
    "--fields",
    ...SESSION,
  ],
  get: ["--pci", ...SESSION],
  sync: [
    "--to",
    "--id",
    "--sort-by",
    "--sort-direction",
    "--sweep",
    "--deletes",
    "--max-deletes",
    "--changes",
    "--priority",
    "--max-duration",
    "--limit",
    "--concurrency",
    "--query",
    ...SESSION,
  ],
  cache: ["clear"],
  completion: ["bash", "zsh", "fish"],
};

/** The completion script for `shell`, for a tool called `name`. */
export function completionScript(shell: Shell, name: string): string {
  const fn = `_${name.replace(/[^A-Za-z0-9]/g, "_")}`;
  if (shell === "fish") {
    const lines = [
      `complete -c ${name} -f -n __fish_use_subcommand -a '${
        COMMANDS.join(" ")
      }'`,
      ...Object.entries(FLAGS).map(([command, flags]) =>
        `complete -c ${name} -f -n '__fish_seen_subcommand_from ${command}' -a '${
          flags.join(" ")
        }'`
      ),
    ];
    return `${lines.join("\n")}\n`;
  }
  const cases = Object.entries(FLAGS).map(([command, flags]) =>
    `    ${command}) words="${flags.join(" ")}" ;;`
  ).join("\n");
  const body = `${fn}() {
  local current="\${COMP_WORDS[COMP_CWORD]}" words
  if [ "$COMP_CWORD" -eq 1 ]; then
    words="${COMMANDS.join(" ")} --help --version"
  else
    case "\${COMP_WORDS[1]}" in
${cases}
    esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$current"))
}
complete -F ${fn} ${name}
`;
  // zsh runs bash completions through bashcompinit.
  return shell === "zsh"
    ? `autoload -U +X bashcompinit && bashcompinit\n${body}`
    : body;
}
