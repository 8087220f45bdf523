// Internal: `completion bash|zsh|fish`: scripts that complete the commands and each command's flags.

import { COMMAND_FLAGS, type Shell, SHELLS } from "./_plan.ts";

const COMMANDS = Object.keys(COMMAND_FLAGS).join(" ");
// Each command's words: `cache`'s action or `completion`'s shells, then _plan's flags (all but the refused --full).
const FLAGS = Object.entries(COMMAND_FLAGS).map(([command, flags]) =>
  [command, [
    ...command === "cache" ? ["clear"] : command === "completion" ? SHELLS : [],
    ...flags.filter((flag) => flag !== "full").map((flag) =>
      flag === "cache" ? "--no-cache" : `--${flag}`
    ),
  ]] as const
);

export function completionScript(shell: Shell, name: string): string {
  const fn = `_${name.replace(/[^A-Za-z0-9]/g, "_")}`;
  if (shell === "fish") {
    const lines = [
      `complete -c ${name} -f -n __fish_use_subcommand -a '${COMMANDS}'`,
      ...FLAGS.map(([command, flags]) =>
        `complete -c ${name} -f -n '__fish_seen_subcommand_from ${command}' -a '${
          flags.join(" ")
        }'`
      ),
    ];
    return `${lines.join("\n")}\n`;
  }
  const cases = FLAGS.map(([command, flags]) =>
    `    ${command}) words="${flags.join(" ")}" ;;`
  ).join("\n");
  const body = `${fn}() {
  local current="\${COMP_WORDS[COMP_CWORD]}" words
  if [ "$COMP_CWORD" -eq 1 ]; then
    words="${COMMANDS} --help --version"
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
