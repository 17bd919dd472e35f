#!/bin/bash
# repro.sh — PostgreSQL SSI commit race, without isoscope.
#
#   repro.sh [--no-gdb] BINDIR [SCHEDULE]
#
# BINDIR holds initdb, pg_ctl and postgres (e.g. /usr/lib/postgresql/15/bin).
# SCHEDULE is repro.sql (default), repro-update.sql or repro-readonly.sql.
# It makes a fresh cluster in a temporary directory, starts it on 127.0.0.1
# (port $PORT, default a free one in 20000-29999), runs the schedule in three
# psql sessions, prints every statement with its answer, and stops the
# server (by its PID) and removes the cluster. With gdb (the default) the
# backend of session A is held inside its COMMIT, at ReleasePredicateLocks;
# with --no-gdb the same schedule runs without the hold (the control).
# Run it as root (gdb attaches to the backend; the server runs as the
# user "postgres", or $PGUSER_OS) or as that user with ptrace allowed.
# Needs psql (any version >= 15), gdb, bash.
set -u
here=$(cd "$(dirname "$0")" && pwd)
gdb=1
if [ "${1:-}" = --no-gdb ]; then gdb=0; shift; fi
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 [--no-gdb] BINDIR [SCHEDULE]" >&2
	exit 2
fi
bindir=$1
schedule=${2:-$here/repro.sql}
# A schedule named without a directory is also looked for beside repro.sh.
if [ ! -e "$schedule" ] && [ "${schedule#*/}" = "$schedule" ]; then schedule=$here/$schedule; fi
for f in initdb pg_ctl postgres; do
	if [ ! -x "$bindir/$f" ]; then echo "$0: $bindir/$f is not an executable" >&2; exit 2; fi
done
if [ ! -r "$schedule" ]; then echo "$0: cannot read the schedule $schedule" >&2; exit 2; fi
command -v psql >/dev/null || { echo "$0: psql is not installed" >&2; exit 2; }
if [ $gdb = 1 ]; then command -v gdb >/dev/null || { echo "$0: gdb is not installed (or use --no-gdb)" >&2; exit 2; }; fi
osuser=${PGUSER_OS:-postgres}
if [ "$(id -u)" = 0 ]; then runas=(runuser -u "$osuser" --); else runas=(); fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ssi-race.XXXXXX")
chmod 755 "$work"
[ "$(id -u)" = 0 ] && chown "$osuser" "$work"
export REPRO_DIR=$work
declare -A fd pend pid_of
gdbpid= srvpid= sessions=()

cleanup() {
	# Let a held backend go before anything else, so that gdb detaches
	# (removing its breakpoint) instead of leaving the backend stopped.
	touch "$work/release" 2>/dev/null
	if [ -n "$gdbpid" ]; then wait "$gdbpid" 2>/dev/null; fi
	for s in "${sessions[@]}"; do eval "exec ${fd[$s]}>&-"; done
	for s in "${sessions[@]}"; do wait "${pid_of[$s]}" 2>/dev/null; done
	if [ -n "$srvpid" ]; then
		# The postmaster's PID (runuser does not pass signals on); SIGINT is
		# a fast shutdown.
		pm=$(head -1 "$work/data/postmaster.pid" 2>/dev/null)
		[ -n "$pm" ] && kill -INT "$pm" 2>/dev/null
		for _ in $(seq 300); do kill -0 "$srvpid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$srvpid" 2>/dev/null && echo "repro.sh: the server (PID $pm) did not stop; its directory $work is kept" >&2 && return
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

fail() { echo "repro.sh: $*" >&2; exit 2; }

# The server's port: $PORT, or the first of 20 ports from a random one in
# 20000-29999 (below Linux's ephemeral range, where a client's socket can
# hold a port without listening) that the server can listen on.
"${runas[@]}" "$bindir/initdb" -D "$work/data" -U postgres -A trust --no-sync >"$work/initdb.log" 2>&1 ||
	fail "initdb failed: $(tail -3 "$work/initdb.log")"
if [ -n "${PORT:-}" ]; then ports=$PORT; else
	p0=$((20000 + RANDOM % 10000)); ports=$(seq "$p0" $((p0 + 19)))
fi
for port in $ports; do
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue # in use
	"${runas[@]}" "$bindir/postgres" -D "$work/data" -c listen_addresses=127.0.0.1 -p "$port" \
		-c unix_socket_directories="$work" -c fsync=off >"$work/server.log" 2>&1 &
	srvpid=$!
	for _ in $(seq 300); do
		psql -X -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atc 'SELECT 1' >/dev/null 2>&1 && break 2
		kill -0 "$srvpid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$srvpid" 2>/dev/null && fail "the server on port $port did not answer in 30 s: $(tail -3 "$work/server.log")"
	wait "$srvpid" 2>/dev/null
	srvpid=
	grep -q 'could not create any TCP/IP sockets' "$work/server.log" || break
done
[ -n "$srvpid" ] || fail "the server did not start: $(tail -3 "$work/server.log")"
version=$(psql -X -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atc 'SELECT version()') || fail "cannot connect to the server on port $port"
echo "# $version"
echo "# schedule $(basename "$schedule"), $( [ $gdb = 1 ] && echo "A held by gdb in ReleasePredicateLocks" || echo "no gdb (control)")"

n=0
# open S: a psql session S reading from a FIFO, answering into $work/S.out.
open() {
	local s=$1
	mkfifo "$work/$s.in"
	psql -X -h 127.0.0.1 -p "$port" -U postgres -d postgres -At -v ON_ERROR_STOP=0 \
		-v PROMPT1= -v PROMPT2= <"$work/$s.in" >"$work/$s.out" 2>&1 &
	pid_of[$s]=$!
	local w
	exec {w}>"$work/$s.in"
	fd[$s]=$w
	sessions+=("$s")
	: >"$work/$s.seen"
	send "$s" "\\set SHOW_CONTEXT never"
	settle "$s"
}
# send S SQL: SQL to session S, followed by a marker line.
send() {
	n=$((n + 1))
	pend[$1]=$n
	printf '%s\n\\echo @@%d\n' "$2" "$n" >&"${fd[$1]}"
}
# settle S: wait for S's last marker, print what S answered before it.
settle() {
	local s=$1 m=${pend[$1]} i
	for i in $(seq 300); do
		grep -q "^@@$m\$" "$work/$s.out" && break
		[ "$i" = 300 ] && fail "session $s gave no answer in 30 s (see $work)"
		sleep 0.1
	done
	# The lines after what was shown so far, up to the marker.
	awk -v m="@@$m" -v seen="$(wc -l <"$work/$s.seen")" 'NR > seen { if ($0 == m) exit; print }' "$work/$s.out" |
		grep -v '^@@' | sed "s/^/    $s| /"
	awk -v m="@@$m" '{ print } $0 == m { exit }' "$work/$s.out" >"$work/$s.seen"
}

while IFS= read -r line; do
	case $line in '' | --*) continue ;; esac
	case $line in
	setup:* | final:*)
		sql=${line#*: }
		echo "${line%%:*}> $sql"
		psql -X -h 127.0.0.1 -p "$port" -U postgres -d postgres -At -q -v ON_ERROR_STOP=1 -c "$sql" 2>&1 | sed 's/^/    | /'
		;;
	"hold "*)
		s=${line#hold }
		[ $gdb = 1 ] || continue
		bpid=$(psql -X -h 127.0.0.1 -p "$port" -U postgres -d postgres -At -c \
			"SELECT pid FROM pg_stat_activity WHERE application_name = 'repro-$s'")
		[ -n "$bpid" ] || fail "no backend for session $s"
		echo "-- gdb -p $bpid -x repro.gdb   (session $s's backend; breakpoint on ReleasePredicateLocks)"
		gdb -q -nx -batch -p "$bpid" -x "$here/repro.gdb" >"$work/gdb.out" 2>&1 &
		gdbpid=$!
		for i in $(seq 300); do
			[ -e "$work/attached" ] && break
			kill -0 "$gdbpid" 2>/dev/null || fail "gdb could not attach to $bpid: $(tail -3 "$work/gdb.out")"
			sleep 0.1
		done
		[ -e "$work/attached" ] || fail "gdb did not attach to $bpid in 30 s"
		;;
	"held "*)
		[ $gdb = 1 ] || continue
		s=${line#held }
		for i in $(seq 300); do
			[ -e "$work/held" ] && break
			kill -0 "$gdbpid" 2>/dev/null || fail "gdb ended before $s's backend reached the breakpoint: $(tail -3 "$work/gdb.out")"
			sleep 0.1
		done
		[ -e "$work/held" ] || fail "session $s's backend did not reach ReleasePredicateLocks in 30 s"
		echo "-- session $s's backend is stopped at the breakpoint:"
		grep -E '^#[0-9]' "$work/gdb.out" | sed 's/^/   gdb| /'
		;;
	"release "*)
		[ $gdb = 1 ] || continue
		touch "$work/release"
		wait "$gdbpid"
		gdbpid=
		echo "-- gdb detached from session ${line#release }'s backend"
		;;
	"wait "*)
		[ $gdb = 1 ] || continue
		s=${line#wait }
		echo "-- answer of $s:"
		settle "$s"
		;;
	[A-Z]:* | [A-Z]\&:*)
		s=${line%%:*}
		sql=${line#*: }
		async=0
		if [ "${s%&}" != "$s" ]; then s=${s%&}; async=$gdb; fi
		if [ -z "${pid_of[$s]:-}" ]; then
			PGAPPNAME=repro-$s open "$s"
		fi
		echo "$s> $sql"
		send "$s" "$sql"
		if [ $async = 1 ]; then echo "    $s| (no answer: the backend is held)"; else settle "$s"; fi
		;;
	*) fail "$schedule: cannot read the line: $line" ;;
	esac
done <"$schedule"
failed=$(grep -l -E '^(ERROR|FATAL|PANIC)' "$work"/*.out 2>/dev/null | xargs -r -n1 basename | sed 's/\.out$//' | tr '\n' ' ')
if [ -n "$failed" ]; then echo "-- a statement failed in session(s): $failed"; else echo "-- no statement failed: every COMMIT above committed"; fi
