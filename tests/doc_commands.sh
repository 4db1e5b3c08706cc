#!/usr/bin/env bash
# Runs every command that README.md, docs/*.md and gui/README.md show, so the
# text cannot drift from what simtrain does (issue 39).
#
#   tests/doc_commands.sh BUILD_DIR [FILE.md ...]
#
# Run from the repository root (ctest does: test `doc_commands`). The files
# default to README.md, docs/*.md and gui/README.md. The convention, also
# written in docs/tests.md:
#
# - A ```console block is run. Each `$ ` line is a command (a line ending in
#   `\` continues on the next); the lines after it, up to the next `$ `, are
#   what it prints: each must appear in its output (standard output and
#   standard error together) as a whole line, in that order, other lines
#   between them allowed. `...` stands for lines left out; `<anything>` inside
#   a line matches any text (for volatile parts: `<wall time>`); `[exit N]`
#   says the command exits with N (0 otherwise).
# - A ```sh block is shown, not run; it must follow a comment line
#   `<!-- doc-test: not run: REASON -->`. Its commands are counted as skipped
#   and listed with the reason.
# - `<!-- doc-test: timeout SECONDS -->` before a ```console block sets its
#   commands' limit (default 60 s).
# - Any other fence (```text, ```json, ```) holds no command: a line there
#   starting with `$ `, `build/`, `./run.sh`, `mpirun ` or `simtrain ` is an
#   error, so a command cannot slip past the test.
#
# Commands run with bash from a scratch copy of the repository's files (one
# per Markdown file, shared by its blocks in order), where `build` is BUILD_DIR
# and BUILD_DIR, BUILD_DIR/gui are on PATH: files they write stay there.
# QT_QPA_PLATFORM=offscreen, and Open MPI may run as root and oversubscribe
# the cores. A command that needs the GUI where it was not built (no Qt), or
# mpirun where it is not installed, is skipped and listed.
set -uo pipefail

if (($# < 1)); then
  echo "usage: $0 BUILD_DIR [FILE.md ...]" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd) || { echo "doc_commands: $1: no such build folder" >&2; exit 2; }
shift
source_dir=$(pwd)
if (($# > 0)); then
  files=("$@")
else
  files=(README.md docs/*.md gui/README.md)
fi

readonly default_timeout_s=60
ran=0 figures=0 skipped=0 passed=0 failed=0
skip_list=()
fail_list=()

export PATH="$build_dir:$build_dir/gui:$PATH"
export QT_QPA_PLATFORM=offscreen
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# A copy of the source tree, `build` pointing at BUILD_DIR: in a git work
# tree its tracked files (so a stray output file there cannot clash with a
# command's), else everything but .git and build folders (those holding a
# CMakeCache.txt).
make_scratch() {
  local scratch entry
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/simtrain-doc.XXXXXX") || return 1
  if git -C "$source_dir" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$source_dir" && git ls-files -z | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
      tar -C "$scratch" -xf - || return 1
  else
    for entry in "$source_dir"/* "$source_dir"/.[!.]*; do
      [[ -e $entry ]] || continue
      [[ $(basename "$entry") == .git ]] && continue
      [[ -f $entry/CMakeCache.txt ]] && continue
      [[ $(cd "$entry" 2>/dev/null && pwd) == "$build_dir" ]] && continue
      cp -r "$entry" "$scratch/" || return 1
    done
  fi
  rm -rf "$scratch/build"
  ln -s "$build_dir" "$scratch/build"
  echo "$scratch"
}

# An expected output line as a bash pattern: glob characters literal,
# `<anything>` a wildcard.
line_pattern() {
  local text=$1 pattern="" literal
  while [[ $text =~ ^([^<]*)\<[^\<\>]*\>(.*)$ ]]; do
    literal=${BASH_REMATCH[1]}
    text=${BASH_REMATCH[2]}
    pattern+=$(escape_glob "$literal")'*'
  done
  pattern+=$(escape_glob "$text")
  printf '%s' "$pattern"
}

escape_glob() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\*/\\*}
  s=${s//\?/\\?}
  s=${s//\[/\\[}
  printf '%s' "$s"
}

# Why a command cannot run here, if it cannot: it needs a part that is
# optional in the build (the GUI, without Qt) or on the machine (mpirun,
# without Open MPI). Anything else missing fails as the command does.
missing_program() {
  local command=$1 scratch=$2 word words=()
  read -ra words <<<"${command//$'\n'/ }"
  for word in "${words[@]}"; do
    if [[ $word == build/gui/* && ! -e $scratch/$word ]]; then
      echo "$word not built (no Qt)"
      return
    fi
  done
  if [[ ${words[0]:-} == mpirun ]] && ! command -v mpirun >/dev/null 2>&1; then
    echo "mpirun not installed"
  fi
}

report_failure() {  # report_failure WHERE WHY OUTPUT_FILE
  failed=$((failed + 1))
  fail_list+=("$1: $2")
  echo "FAIL $1: $2"
  if [[ -n ${3:-} && -s $3 ]]; then
    echo "  its output (last 30 lines):"
    tail -n 30 "$3" | sed 's/^/  | /'
  fi
}

# run_command FILE LINE COMMAND TIMEOUT SCRATCH EXPECTED_LINE...
run_command() {
  local file=$1 line=$2 command=$3 timeout_s=$4 scratch=$5
  shift 5
  local where="$file:$line" expected_exit=0 expected=() entry e why
  for entry in "$@"; do  # each "LINE<tab>TEXT"
    e=${entry#*$'\t'}
    if [[ $e =~ ^\[exit\ ([0-9]+)\]$ ]]; then
      expected_exit=${BASH_REMATCH[1]}
    elif [[ $e != "..." && -n ${e//[[:space:]]/} ]]; then
      expected+=("$entry")
    fi
  done
  why=$(missing_program "$command" "$scratch")
  if [[ -n $why ]]; then
    skipped=$((skipped + 1))
    skip_list+=("$where: $why: ${command%%$'\n'*}")
    echo "SKIP $where: $why"
    return
  fi
  ran=$((ran + 1))
  local output=$scratch/.doc-test-output start_s end_s rc
  start_s=$(date +%s)
  (cd "$scratch" && timeout --kill-after=10 "$timeout_s" bash -c "$command") >"$output" 2>&1 </dev/null
  rc=$?
  end_s=$(date +%s)
  echo "ran  $where ($((end_s - start_s)) s): ${command%%$'\n'*}"
  if ((rc == 124 || rc == 137)) && ((expected_exit != rc)); then
    report_failure "$where" "timed out after $timeout_s s: $command" "$output"
    return
  fi
  if ((rc != expected_exit)); then
    report_failure "$where" "exit code $rc, the text says $expected_exit: $command" "$output"
    return
  fi
  local actual=() a pattern next=0 found missing=()
  mapfile -t actual <"$output"
  for ((a = 0; a < ${#actual[@]}; a++)); do
    actual[a]=${actual[a]##*$'\r'}
    actual[a]=${actual[a]%"${actual[a]##*[![:space:]]}"}
  done
  for entry in "${expected[@]}"; do
    e=${entry#*$'\t'}
    figures=$((figures + 1))
    pattern=$(line_pattern "${e%"${e##*[![:space:]]}"}")
    found=-1
    for ((a = next; a < ${#actual[@]}; a++)); do
      # shellcheck disable=SC2053  # the pattern is a glob on purpose
      if [[ ${actual[a]} == $pattern ]]; then
        found=$a
        break
      fi
    done
    if ((found < 0)); then
      missing+=("$file:${entry%%$'\t'*}: $e")
    else
      next=$((found + 1))
    fi
  done
  if ((${#missing[@]} > 0)); then
    failed=$((failed + 1))
    for e in "${missing[@]}"; do
      fail_list+=("$e  (not in the output of $where, in order)")
      echo "FAIL $e  (not in the output of $where, in order)"
    done
    echo "  its output:"
    head -n 80 "$output" | sed 's/^/  | /'
    return
  fi
  passed=$((passed + 1))
}

check_file() {
  local file=$1 scratch lines=() n i directive="" timeout_s fence_indent lang
  local body_start block_line text close
  if [[ ! -f $file ]]; then
    report_failure "$file" "no such file"
    return
  fi
  mapfile -t lines <"$file"
  n=${#lines[@]}
  scratch=$(make_scratch) || { report_failure "$file" "cannot make a scratch copy"; return; }
  for ((i = 0; i < n; i++)); do
    text=${lines[i]}
    if [[ $text =~ ^[[:space:]]*\<!--\ doc-test:\ (.*)\ --\>[[:space:]]*$ ]]; then
      directive=${BASH_REMATCH[1]}
      continue
    fi
    if [[ ! $text =~ ^([[:space:]]*)\`\`\`([A-Za-z0-9_+-]*) ]]; then
      [[ -n ${text//[[:space:]]/} ]] && directive=""
      continue
    fi
    fence_indent=${#BASH_REMATCH[1]}
    lang=${BASH_REMATCH[2]}
    block_line=$((i + 1))
    body_start=$((i + 1))
    close=$body_start  # the closing fence's index
    while ((close < n)) && [[ ! ${lines[close]} =~ ^[[:space:]]*\`\`\`[[:space:]]*$ ]]; do
      close=$((close + 1))
    done
    i=$close  # the scan goes on after the block
    if ((i >= n)); then
      report_failure "$file:$block_line" "a fence that is never closed"
      break
    fi
    local body=() j
    for ((j = body_start; j < i; j++)); do
      body+=("${lines[j]:fence_indent}")
    done
    case $lang in
      console)
        timeout_s=$default_timeout_s
        if [[ $directive =~ ^timeout\ ([0-9]+)$ ]]; then
          timeout_s=${BASH_REMATCH[1]}
        elif [[ -n $directive ]]; then
          report_failure "$file:$block_line" "unknown doc-test directive before a console block: $directive"
        fi
        run_console_block "$file" "$body_start" "$timeout_s" "$scratch" "${body[@]}"
        ;;
      sh)
        if [[ $directive =~ ^not\ run:\ (.+)$ ]]; then
          skip_sh_block "$file" "$body_start" "${BASH_REMATCH[1]}" "${body[@]}"
        else
          report_failure "$file:$block_line" "a sh block without <!-- doc-test: not run: REASON --> before it (write commands to run in a console block)"
        fi
        ;;
      *)
        for ((j = 0; j < ${#body[@]}; j++)); do
          if [[ ${body[j]} =~ ^[[:space:]]*(\$\ |build/|\./run\.sh|mpirun\ |simtrain\ ) ]]; then
            report_failure "$file:$((body_start + j + 1))" "a command in a \`\`\`$lang block (use console to run it, or sh with a not-run reason)"
            break
          fi
        done
        ;;
    esac
    directive=""
  done
  rm -rf "$scratch"
}

# run_console_block FILE FIRST_BODY_INDEX TIMEOUT SCRATCH BODY_LINE...
run_console_block() {
  local file=$1 first=$2 timeout_s=$3 scratch=$4
  shift 4
  local body=("$@") j command="" command_line=0 expected=() continued=0
  for ((j = 0; j < ${#body[@]}; j++)); do
    local text=${body[j]}
    if ((continued)); then
      command+=$'\n'$text
      [[ $text == *\\ ]] || continued=0
      continue
    fi
    if [[ $text == '$ '* ]]; then
      if [[ -n $command ]]; then
        run_command "$file" "$command_line" "$command" "$timeout_s" "$scratch" "${expected[@]}"
      fi
      command=${text#'$ '}
      command_line=$((first + j + 1))
      expected=()
      [[ $text == *\\ ]] && continued=1
    elif [[ -z $command ]]; then
      [[ -z ${text//[[:space:]]/} ]] && continue
      report_failure "$file:$((first + j + 1))" "a console block must start with a \`\$ \` command line"
      return
    else
      expected+=("$((first + j + 1))"$'\t'"$text")
    fi
  done
  if [[ -n $command ]]; then
    run_command "$file" "$command_line" "$command" "$timeout_s" "$scratch" "${expected[@]}"
  fi
}

# skip_sh_block FILE FIRST_BODY_INDEX REASON BODY_LINE...
skip_sh_block() {
  local file=$1 first=$2 reason=$3
  shift 3
  local body=("$@") j continued=0 text
  for ((j = 0; j < ${#body[@]}; j++)); do
    text=${body[j]}
    if ((continued)); then
      [[ $text == *\\ ]] || continued=0
      continue
    fi
    [[ $text =~ ^[[:space:]]*(#|$) ]] && continue
    [[ $text == *\\ ]] && continued=1
    skipped=$((skipped + 1))
    skip_list+=("$file:$((first + j + 1)): not run: $reason: $text")
    echo "SKIP $file:$((first + j + 1)): not run: $reason"
  done
}

start_s=$(date +%s)
for file in "${files[@]}"; do
  check_file "$file"
done
end_s=$(date +%s)

echo
echo "skipped commands:"
for s in "${skip_list[@]}"; do echo "  $s"; done
if ((failed > 0)); then
  echo "failures:"
  for f in "${fail_list[@]}"; do echo "  $f"; done
fi
echo "doc commands: $ran ran, $figures output lines checked, $skipped skipped, in $((end_s - start_s)) s (${#files[@]} files)"
echo "$passed passed, $failed failed"
((failed == 0))
