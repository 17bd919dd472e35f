# Attached to transaction A's backend by repro.sh (gdb -batch -p PID -x repro.gdb).
# Stops the backend when its COMMIT reaches ReleasePredicateLocks: after
# ProcArrayEndTransaction made the commit visible to new snapshots, before
# SSI marks the transaction committed. The other sessions go on meanwhile;
# repro.sh creates $REPRO_DIR/release to let the backend finish its COMMIT.
set debuginfod enabled off
set pagination off
set confirm off
break ReleasePredicateLocks
shell touch "$REPRO_DIR/attached"
continue
bt 6
shell touch "$REPRO_DIR/held"
shell while [ ! -e "$REPRO_DIR/release" ]; do sleep 0.1; done
detach
quit
