# bash completion for ringtrace(1): installed by `make install` into
# share/bash-completion/completions/ringtrace, loaded by bash-completion
# the first time `ringtrace` is completed (or sourced by hand).
#
# The commands and each command's options are read from the command's own
# --help when a word is completed, so they cannot drift from what it
# accepts; PID|NAME arguments are completed with the programs `ringtrace ps`
# lists, trace directories with directories.

# The command's subcommands: the first word of each line of the "commands:"
# block of `ringtrace --help`.
_ringtrace_commands()
{
	"$1" --help 2>/dev/null | awk '/^commands:/ { c = 1; next } c && NF == 0 { exit } c { print $1 }'
}

# The options a subcommand's --help names: words starting with - or --
# at the start of a line or after a space, "[" or ",".
_ringtrace_options()
{
	"$1" "$2" --help 2>&1 | grep -oE '(^|[][ ,|])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[][ ,|]//' | sort -u
}

# Running traceable programs: their pids and names (`ringtrace ps`: PID
# USER NAME ...).
_ringtrace_programs()
{
	"$1" ps 2>/dev/null | awk 'NR > 1 { print $1; print $3 }'
}

# Files and directories, shown as the shell shows file names (a / after
# a directory).
_ringtrace_files()
{
	compopt -o filenames 2>/dev/null
	compgen -f -- "$1"
}
_ringtrace_dirs()
{
	compopt -o filenames 2>/dev/null
	compgen -d -- "$1"
}

_ringtrace()
{
	local cur prev words cword
	if declare -F _init_completion >/dev/null 2>&1; then
		_init_completion -n = || return
	else
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	fi
	local rt=${words[0]}
	COMPREPLY=()

	if [ "$cword" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$(_ringtrace_commands "$rt") --help --version" -- "$cur"))
		return
	fi
	local cmd=${words[1]}

	# After "--" (record, mem): the program to run, then its arguments.
	local i
	for ((i = 2; i < cword; i++)); do
		if [ "${words[i]}" = "--" ]; then
			if declare -F _command_offset >/dev/null 2>&1; then
				_command_offset $((i + 1))
			elif [ $((i + 1)) -eq "$cword" ]; then
				COMPREPLY=($(compgen -c -- "$cur"))
			else
				COMPREPLY=($(_ringtrace_files "$cur"))
			fi
			return
		fi
	done

	# The value of the option before the cursor.
	case $prev in
	-p)
		COMPREPLY=($(compgen -W "$(_ringtrace_programs "$rt")" -- "$cur"))
		return ;;
	-o | --bin | --from-bin)
		COMPREPLY=($(_ringtrace_files "$cur"))
		return ;;
	--debug-dir)
		COMPREPLY=($(_ringtrace_dirs "$cur"))
		return ;;
	--mode)
		COMPREPLY=($(compgen -W "discard overwrite" -- "$cur"))
		return ;;
	--by)
		COMPREPLY=($(compgen -W "callsite stack function" -- "$cur"))
		return ;;
	--sort)
		COMPREPLY=($(compgen -W "requested allocated allocs frees frag leaked xcpu" -- "$cur"))
		return ;;
	--to)
		COMPREPLY=($(compgen -W "chrome sqlite pprof" -- "$cur"))
		return ;;
	--weight)
		COMPREPLY=($(compgen -W "events bytes" -- "$cur"))
		return ;;
	--buffer-size | --subbuffers | -e | --stack-bits | --snapshot-on | --min-interval | --sample | --sample-seed | \
		--count | --interval | -d | -n | --top | --max-problems | --blocking-timeout)
		return ;;
	esac

	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_ringtrace_options "$rt" "$cmd")" -- "$cur"))
		return
	fi

	# A positional argument: is one already there (words that are neither
	# options nor option values)? Only the first one is a program or trace.
	local n=0 w
	for ((i = 2; i < cword; i++)); do
		w=${words[i]}
		case $w in
		-o | -p | -d | -n | -e | --*-dir | --bin | --from-bin | --mode | --by | --sort | --to | --weight | \
			--buffer-size | --subbuffers | --stack-bits | --snapshot-on | --min-interval | --sample | --sample-seed | --count | \
			--interval | --top | --max-problems | --blocking-timeout)
			((i++)) ;;
		-*) ;;
		*) ((n++)) ;;
		esac
	done
	[ "$n" -gt 0 ] && return

	case $cmd in
	list | enable | disable | on | off | stat | reset | buffer-size | show | snapshot-enable | \
		snapshot-disable | snapshot | top)
		COMPREPLY=($(compgen -W "$(_ringtrace_programs "$rt")" -- "$cur")) ;;
	recover)
		COMPREPLY=($(compgen -W "$(_ringtrace_programs "$rt")" -- "$cur") $(_ringtrace_files "$cur")) ;;
	stackmap)
		COMPREPLY=($(compgen -W "$(_ringtrace_programs "$rt")" -- "$cur") $(_ringtrace_dirs "$cur")) ;;
	dump | report | convert | check)
		COMPREPLY=($(_ringtrace_dirs "$cur")) ;;
	esac
}
complete -F _ringtrace ringtrace
