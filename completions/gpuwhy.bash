# bash completion for gpuwhy (make install puts it in
# PREFIX/share/bash-completion/completions/gpuwhy). Commands and options are
# read from gpuwhy's own --help, so they match the installed version.
_gpuwhy()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmd="" i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--)	# the job's own command line: commands, then files
			if ((i == COMP_CWORD - 1)); then
				COMPREPLY=($(compgen -c -- "$cur"))
			else
				compopt -o default 2>/dev/null
				COMPREPLY=()
			fi
			return 0 ;;
		-*) ;;
		*) [ -z "$cmd" ] && cmd=${COMP_WORDS[i]} ;;
		esac
	done
	if [ -z "$cmd" ]; then
		COMPREPLY=($(compgen -W "$(gpuwhy --help 2>/dev/null |
			awk '/^commands:/ { f = 1; next } f && /^$/ { exit } f { print $1 }') --help --version" -- "$cur"))
		return 0
	fi
	case $prev in
	-o|--output|--trace|--html) compopt -o default 2>/dev/null; COMPREPLY=(); return 0 ;;
	--data) COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
	--pid) COMPREPLY=($(compgen -W "$(ls /proc | grep -E '^[0-9]+$')" -- "$cur")); return 0 ;;
	--color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return 0 ;;
	-t|--type) # dump's record types, from its schema table
		COMPREPLY=($(compgen -W "$(gpuwhy dump --schema 2>/dev/null | awk -F' *[|] *' 'NR > 2 { print $3 }')" -- "$cur"))
		return 0 ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(gpuwhy "$cmd" --help 2>/dev/null | grep -oE -- '--[a-z][a-z-]*' | sort -u)" -- "$cur"))
		return 0
	fi
	case $cmd in
	report|dump|diff) COMPREPLY=($(compgen -f -X '!*.gwr' -- "$cur") $(compgen -d -- "$cur")) ;;
	*) compopt -o default 2>/dev/null; COMPREPLY=() ;;
	esac
	return 0
}
complete -F _gpuwhy gpuwhy
