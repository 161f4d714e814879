#!/usr/bin/env bash
# A Neo4j 5.26 LTS Community server for the tests and the bench, on bolt://127.0.0.1:7687
# (user neo4j, password executor-neo4j), its data in a temporary folder.
#
#   services/neo4j/start.sh          start it (returns at once if something already answers Bolt there)
#   services/neo4j/start.sh stop     stop the one this script started, and delete its data
#   services/neo4j/start.sh status   say whether it answers
#
# The launcher (pom.xml + one Java class beside this script) is built with Maven on first use; its jars
# come from Maven Central and the build output lives in the cache folder below, never in the checkout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOST=127.0.0.1
PORT=7687
USER_NAME=neo4j
PASSWORD=executor-neo4j
BUILD="${XDG_CACHE_HOME:-$HOME/.cache}/executor/neo4j/build"
STATE="${TMPDIR:-/tmp}/executor-neo4j"   # pid file, log and the database itself
HEAP="${EXECUTOR_NEO4J_HEAP:-768m}"       # the machine is shared: the test graphs need little
WAIT_S="${EXECUTOR_NEO4J_WAIT_S:-180}"  # a start took 18-51 s at load averages of 3-8 on 2 cores

say() { echo "neo4j: $*"; }
die() { echo "neo4j: error: $*" >&2; exit 1; }

# A Bolt handshake: the magic number and the versions we speak (5.0-5.4, 4.4); a Bolt server answers
# with the one it picked, anything else (nothing listening, another protocol) does not.
bolt_answers() {
    local reply
    reply="$(timeout 3 bash -c "exec 3<>/dev/tcp/$HOST/$PORT && \
        printf '\x60\x60\xb0\x17\x00\x04\x04\x05\x00\x00\x04\x04\x00\x00\x00\x00\x00\x00\x00\x00' >&3 && \
        head -c 4 <&3 | od -An -tx1" 2>/dev/null)" || return 1
    reply="${reply//[[:space:]]/}"
    [[ ${#reply} -eq 8 && "$reply" != 00000000 ]]
}

# The pid in our pid file, if that process is still our launcher (a pid can be reused).
our_pid() {
    local pid
    [[ -f "$STATE/neo4j.pid" ]] || return 1
    pid="$(cat "$STATE/neo4j.pid")"
    [[ "$pid" =~ ^[0-9]+$ ]] && tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | grep -q "executor.neo4j.Launcher" \
        && echo "$pid"
}

print_env() {
    echo "export NEO4J_URI=bolt://$HOST:$PORT NEO4J_USER=$USER_NAME NEO4J_PASSWORD=$PASSWORD"
    echo "# stop it with: $HERE/start.sh stop"
}

build() {
    # Rebuild only when the launcher's sources changed since the last build.
    local stamp
    stamp="$(cat "$HERE/pom.xml" "$HERE"/src/main/java/executor/neo4j/*.java | sha256sum | cut -d' ' -f1)"
    if [[ -f "$BUILD/.sources" && "$(cat "$BUILD/.sources")" == "$stamp" && -d "$BUILD/lib" ]]; then
        return
    fi
    command -v mvn >/dev/null || die "Maven is not installed (apt-get install -y maven openjdk-17-jdk-headless)"
    say "building the launcher with Maven (first time: downloads Neo4j's jars from Maven Central)..."
    local started=$SECONDS
    mkdir -p "$BUILD"
    if ! (cd "$HERE" && mvn -q -B -Dexecutor.build.dir="$BUILD" package > "$BUILD/../maven.log" 2>&1); then
        tail -n 30 "$BUILD/../maven.log" >&2
        die "the Maven build failed (log: $BUILD/../maven.log)"
    fi
    echo "$stamp" > "$BUILD/.sources"
    say "built in $((SECONDS - started)) s"
}

start() {
    if bolt_answers; then
        say "already running: bolt://$HOST:$PORT answers"
        print_env
        return
    fi
    if timeout 3 bash -c "exec 3<>/dev/tcp/$HOST/$PORT" 2>/dev/null; then
        die "$HOST:$PORT is taken by something that does not answer Bolt: stop it first"
    fi
    command -v java >/dev/null || die "Java is not installed (apt-get install -y openjdk-17-jdk-headless)"
    build
    if pid="$(our_pid)"; then  # started, not answering yet (or hung): start afresh
        kill "$pid" 2>/dev/null || true
    fi
    rm -rf "$STATE/home"
    mkdir -p "$STATE"
    local started=$SECONDS
    # the opens Neo4j's own launcher passes: without them its page cache runs in a slower fallback mode
    NEO4J_PASSWORD="$PASSWORD" nohup setsid java -Xms256m "-Xmx$HEAP" -XX:+UseSerialGC \
        --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
        --add-opens=java.base/java.io=ALL-UNNAMED -Dio.netty.tryReflectionSetAccessible=true \
        -cp "$BUILD/classes:$BUILD/lib/*" executor.neo4j.Launcher "$STATE/home" "$HOST" "$PORT" \
        > "$STATE/neo4j.log" 2>&1 < /dev/null &
    echo $! > "$STATE/neo4j.pid"
    local pid=$!
    # ready = the launcher has set the password (it prints so) and Bolt answers
    until grep -q "^neo4j ready" "$STATE/neo4j.log" 2>/dev/null && bolt_answers; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 30 "$STATE/neo4j.log" >&2
            die "the server exited before it answered (log: $STATE/neo4j.log)"
        fi
        if (( SECONDS - started > WAIT_S )); then
            tail -n 30 "$STATE/neo4j.log" >&2
            die "no answer on bolt://$HOST:$PORT after $WAIT_S s (log: $STATE/neo4j.log; pid $pid left running)"
        fi
        sleep 1
    done
    say "started in $((SECONDS - started)) s (pid $pid, log $STATE/neo4j.log, data $STATE/home)"
    print_env
}

stop() {
    local pid
    if ! pid="$(our_pid)"; then
        bolt_answers && say "bolt://$HOST:$PORT answers, but not from a server this script started: left alone"
        say "not running (from this script)"
        rm -f "$STATE/neo4j.pid"
        return
    fi
    kill "$pid"
    for _ in $(seq 60); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    rm -rf "$STATE/home" "$STATE/neo4j.pid"
    say "stopped (pid $pid); its data is deleted"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    status)
        if bolt_answers; then say "running: bolt://$HOST:$PORT answers"; print_env; else say "not running"; exit 1; fi ;;
    *) die "usage: $0 [start|stop|status]" ;;
esac
