#!/usr/bin/env bash
# Makes sure the system tools the tests use are here. Run by test.sh before anything else.
#
# The launcher tests run a real sshd in network namespaces (openssh-server, openssh-client,
# iproute2, rsync) and a real Open MPI job (openmpi-bin); the build needs a C linker and Python's
# venv. Whatever is missing is installed with apt-get when running as root on Debian or Ubuntu;
# otherwise this names what is missing and how to install it, and fails.
set -euo pipefail

# tool (a command, or a path) and the Debian package that provides it
tools=(
    /usr/sbin/sshd openssh-server
    ssh openssh-client
    ssh-keygen openssh-client
    rsync rsync
    mpirun openmpi-bin
    ip iproute2
    cc gcc
)

missing_tools=()
missing_packages=()

check() {
    missing_tools=()
    missing_packages=()
    local i tool package
    for ((i = 0; i < ${#tools[@]}; i += 2)); do
        tool=${tools[i]}
        package=${tools[i + 1]}
        if ! command -v "$tool" >/dev/null 2>&1; then
            missing_tools+=("$tool")
            missing_packages+=("$package")
        fi
    done
    if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
        missing_tools+=("python3 -m venv")
        missing_packages+=(python3-venv)
    fi
    # each package once, in order
    mapfile -t missing_packages < <(printf '%s\n' "${missing_packages[@]}" |
        awk 'NF && !seen[$0]++')
}

if ! command -v python3 >/dev/null 2>&1 || ! command -v cargo >/dev/null 2>&1; then
    echo "test-deps: the tests need python3 (>= 3.10) and a Rust toolchain (cargo, rustc at" \
        "least the rust-version in Cargo.toml; https://rustup.rs)" >&2
    exit 1
fi

if [ "$(id -u)" != 0 ]; then
    echo "test-deps: not root: the ssh launcher tests, which need network namespaces, will be" \
        "skipped" >&2
fi

check
if ((${#missing_tools[@]} == 0)); then
    exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test-deps: installing ${missing_packages[*]} (for ${missing_tools[*]})" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_packages[@]}" >/dev/null
    check
    if ((${#missing_tools[@]} == 0)); then
        exit 0
    fi
    echo "test-deps: still missing after apt-get install: ${missing_tools[*]}" >&2
    exit 1
fi

cat >&2 <<EOF
test-deps: the tests need ${missing_tools[*]}, which this machine lacks.
Install them (on Debian or Ubuntu) with:
    sudo apt-get install -y ${missing_packages[*]}
or run ./test.sh as root, which installs them itself.
EOF
exit 1
