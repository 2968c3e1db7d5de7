# slurm-lib.sh: a private Slurm on this machine for the Slurm backend's tests
# and scripts/bench (docs/CLUSTER.md): munged with its own key and socket,
# slurmctld and one slurmd per node on free localhost ports, all state under
# one directory. Sourced; needs sh.
#
#   slurm_start DIR [NODES]  start it (NODES slurmd daemons n1..nN, default 1);
#                            exports SLURM_CONF; 0, or 77 with the reason in
#                            $slurm_why when this machine cannot run Slurm
#   slurm_stop               stop every daemon it started (call from a trap)
#   slurm_kill_node NAME [now]  the node lost: its slurmd, and the processes
#                            of the Slurm jobs and steps on it, killed (SIGKILL);
#                            with now, Slurm told at once (the node set DOWN)
#                            instead of finding out after SlurmdTimeout
#   slurm_restart_node NAME  start its slurmd (again)
#   slurm_revive_node NAME   a lost node back: its slurmd started, the node
#                            resumed, and idle
# SLURM_LIB_TIMEOUT: SlurmdTimeout, the seconds before a silent node is down
# (default 30).

slurm_pids=""

# A TCP port no socket of this machine has (by /proc/net/tcp*), from
# 20000-39999, a new one each call, into $slurm_p.
slurm_next=$(( ($$ * 37) % 20000 ))
slurm_port() {
    while :; do
        slurm_next=$(( (slurm_next + 1) % 20000 ))
        _p=$((20000 + slurm_next))
        _hex=$(printf ':%04X ' $_p)
        cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q "$_hex" || break
    done
    slurm_p=$_p
}

slurm_start() {
    slurm_dir=$1
    _n=${2:-1}
    slurm_why=""
    for _t in munged mungekey slurmctld slurmd sbatch squeue sinfo scancel; do
        if ! command -v $_t >/dev/null 2>&1 && ! [ -x /usr/sbin/$_t ]; then
            slurm_why="$_t is not installed (scripts/setup installs slurm-wlm and munge)"
            return 77
        fi
    done
    PATH=$PATH:/usr/sbin
    mkdir -p "$slurm_dir/munge" "$slurm_dir/state" "$slurm_dir/log" || return 1
    chmod 700 "$slurm_dir/munge"
    mungekey -c -k "$slurm_dir/munge/key" -b 1024 2>"$slurm_dir/log/mungekey" ||
        dd if=/dev/urandom of="$slurm_dir/munge/key" bs=1024 count=1 2>/dev/null
    chmod 400 "$slurm_dir/munge/key"
    _sock=$slurm_dir/munge/sock
    munged -f --socket="$_sock" --key-file="$slurm_dir/munge/key" \
        --pid-file="$slurm_dir/munge/pid" --log-file="$slurm_dir/log/munged.log" \
        --seed-file="$slurm_dir/munge/seed" 2>"$slurm_dir/log/munged.err"
    if [ ! -s "$slurm_dir/munge/pid" ]; then
        slurm_why="munged did not start: $(cat "$slurm_dir/log/munged.err")"
        return 77
    fi
    slurm_pids="$(cat "$slurm_dir/munge/pid")"
    _me=$(id -un)
    slurm_port
    _cport=$slurm_p
    {
        echo "ClusterName=comb"
        echo "SlurmctldHost=localhost(127.0.0.1)"
        echo "SlurmctldPort=$_cport"
        echo "SlurmUser=$_me"
        echo "SlurmdUser=$_me"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        echo "AuthInfo=socket=$_sock"
        echo "StateSaveLocation=$slurm_dir/state"
        echo "SlurmdSpoolDir=$slurm_dir/spool/%n"
        echo "SlurmctldPidFile=$slurm_dir/slurmctld.pid"
        echo "SlurmdPidFile=$slurm_dir/slurmd.%n.pid"
        echo "SlurmctldLogFile=$slurm_dir/log/slurmctld.log"
        echo "SlurmdLogFile=$slurm_dir/log/slurmd.%n.log"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_CPU"
        echo "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "MpiDefault=none"
        echo "ReturnToService=2"
        echo "SlurmdTimeout=${SLURM_LIB_TIMEOUT:-30}"
        echo "MinJobAge=300"
        echo "PlugStackConfig=$slurm_dir/plugstack.conf"
        _i=1
        while [ $_i -le $_n ]; do
            slurm_port
            echo "NodeName=n$_i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$slurm_p CPUs=2 State=UNKNOWN"
            _i=$((_i + 1))
        done
        echo "PartitionName=comb Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    } >"$slurm_dir/slurm.conf"
    : >"$slurm_dir/plugstack.conf"
    SLURM_CONF=$slurm_dir/slurm.conf
    export SLURM_CONF
    if ! slurmctld -i 2>"$slurm_dir/log/slurmctld.err"; then
        slurm_why="slurmctld did not start: $(cat "$slurm_dir/log/slurmctld.err")"
        return 77
    fi
    _i=0
    while [ ! -s "$slurm_dir/slurmctld.pid" ] && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
    slurm_pids="$slurm_pids $(cat "$slurm_dir/slurmctld.pid" 2>/dev/null)"
    _i=1
    while [ $_i -le $_n ]; do
        slurm_restart_node n$_i || return $?
        _i=$((_i + 1))
    done
    # Every node idle, or the reason it is not.
    _i=0
    while [ $_i -lt 300 ]; do
        _idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle$')
        [ "$_idle" = "$_n" ] && return 0
        sleep 0.1
        _i=$((_i + 1))
    done
    slurm_why="the nodes did not become idle in 30 s: $(sinfo -N 2>&1 | tr '\n' ' ')
$(tail -5 "$slurm_dir/log/slurmctld.log" 2>/dev/null)"
    return 77
}

slurm_restart_node() {
    mkdir -p "$slurm_dir/spool/$1"
    if ! slurmd -N "$1" 2>"$slurm_dir/log/slurmd.$1.err"; then
        slurm_why="slurmd did not start: $(cat "$slurm_dir/log/slurmd.$1.err")"
        return 77
    fi
    _j=0
    while [ ! -s "$slurm_dir/slurmd.$1.pid" ] && [ $_j -lt 50 ]; do sleep 0.1; _j=$((_j + 1)); done
    slurm_pids="$slurm_pids $(cat "$slurm_dir/slurmd.$1.pid" 2>/dev/null)"
}

slurm_revive_node() {
    slurm_restart_node "$1" || return $?
    scontrol update NodeName="$1" State=RESUME 2>/dev/null
    _j=0
    while [ "$(sinfo -h -n "$1" -o %t)" != idle ] && [ $_j -lt 300 ]; do sleep 0.1; _j=$((_j + 1)); done
    [ "$(sinfo -h -n "$1" -o %t)" = idle ]
}

slurm_kill_node() {
    # The Slurm jobs of this node alone (every step of theirs), and the steps
    # on it of jobs of several nodes (an allocation's unit steps).
    _jobs=$(squeue -h -t running -w "$1" -o '%i %D' 2>/dev/null | awk '$2 == 1 {print $1}')
    _steps=$(squeue -h -s -w "$1" -o %i 2>/dev/null)
    kill -9 "$(cat "$slurm_dir/slurmd.$1.pid")" 2>/dev/null || :
    rm -f "$slurm_dir/slurmd.$1.pid"
    # Their processes: slurmstepd, named after its step, and the tasks (they
    # carry the node's name and this cluster's SLURM_CONF).
    for _e in /proc/[0-9]*/environ; do
        _p=${_e#/proc/}
        _p=${_p%/environ}
        _cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$_p/cmdline") || continue
        for _id in $_jobs; do
            case $_cmd in "slurmstepd: [$_id."*) kill -9 "$_p" 2>/dev/null || : ;; esac
        done
        for _s in $_steps; do
            case $_cmd in "slurmstepd: [$_s]"*) kill -9 "$_p" 2>/dev/null || : ;; esac
        done
        _env=$(tr '\0' '\n' 2>/dev/null <"$_e") || continue
        if printf '%s\n' "$_env" | grep -qx "SLURMD_NODENAME=$1" &&
           printf '%s\n' "$_env" | grep -qx "SLURM_CONF=$SLURM_CONF"; then
            kill -9 "$_p" 2>/dev/null || :
        fi
    done
    if [ "${2:-}" = now ]; then
        scontrol update NodeName="$1" State=DOWN Reason=lost
    fi
}

# Stops the daemons by the pids they wrote (the jobs' processes with them:
# slurmd is asked to stop first, while its jobs can still be signalled).
slurm_stop() {
    [ -n "${slurm_dir:-}" ] || return 0
    if [ -n "${SLURM_CONF:-}" ] && command -v scancel >/dev/null 2>&1; then
        scancel -u "$(id -un)" 2>/dev/null
        # Until the jobs are gone: a slurmstepd outlives a stopped slurmd.
        _i=0
        while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ $_i -lt 100 ]; do
            sleep 0.1
            _i=$((_i + 1))
        done
    fi
    for _p in $(cat "$slurm_dir"/slurmd.*.pid 2>/dev/null) \
              $(cat "$slurm_dir/slurmctld.pid" 2>/dev/null) \
              $(cat "$slurm_dir/munge/pid" 2>/dev/null); do
        kill "$_p" 2>/dev/null
    done
    _i=0
    for _p in $slurm_pids; do
        while kill -0 "$_p" 2>/dev/null && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
        kill -9 "$_p" 2>/dev/null
    done
    slurm_pids=""
}

# slurm_stages RUNDIR: a line per stage of a run on Slurm (the unit name's
# last part): the stage, its longest unit's span in seconds (its first job's
# start to its last job's end, from the unit's journal) and that unit.
slurm_stages() {
    for _u in "$1"/slurm/*/; do
        [ -e "$_u/journal" ] || continue    # (RUNDIR/slurm/log/ of a run of steps)
        "$COMB" jobs dump "$_u" | awk -v u="$(basename "$_u")" '
            $1 == "job" { for (i = 2; i < NF; i++) { if ($i == "started") s = $(i + 1); if ($i == "ended") e = $(i + 1) }
                          if (lo == "" || s < lo) lo = s; if (e > hi) hi = e }
            END { n = split(u, p, "."); printf "%s %.3f %s\n", p[n], hi - lo, u }'
    done | sort -k1,1n -k2,2nr | awk '!seen[$1]++'
}

# slurm_critical_path RUNDIR: the seconds of the units' work on the critical
# path: the stages' longest spans, summed.
slurm_critical_path() {
    slurm_stages "$1" | awk '{ t += $2 } END { printf "%.2f", t }'
}
