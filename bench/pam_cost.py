"""What pam_usher adds to a login (issue 37: at most 5 ms at the median).

Three commands run in turn, A B C A B C ..., so that all three see the same machine:

- pamtester authenticating through a stack of pam_usher alone (libpam-wrapper's PAM_WRAPPER_SERVICE_DIR, so that
  nothing under /etc/pam.d is read or changed);
- pamtester through a stack of pam_permit alone: the cost of starting pamtester and libpam, which is not the module's;
- the same password login sent straight to usherd's socket from this process: the daemon's own work.

The module's cost is the first median less the other two. The account's password is hashed at scrypt's lowest cost
that usherd accepts, so that the daemon's share (the same in both) does not drown the module's in its noise.
"""

import json
import os
import socket
import statistics
import subprocess
import time

PAM_WRAPPER = "/usr/lib/x86_64-linux-gnu/libpam_wrapper.so"
PAM_PERMIT = "/usr/lib/x86_64-linux-gnu/security/pam_permit.so"
CONFIG = '[daemon]\npassword_hash_cost = 10\n'
EMAIL = "pam@example.com"
PASSWORD = "pam-bench-password"


def exchange(path, request):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        connection.sendall((json.dumps(request) + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = connection.recv(65536)
            if not chunk:
                break
            data += chunk
    answer = json.loads(data)
    if "error" in answer:
        raise SystemExit(f"{request['method']} failed: {answer['error']}")
    return answer["result"]


def measure(directory, sock, module, runs):
    """Returns the line `make bench` prints. `sock`: a usherd started with CONFIG; `module`: pam_usher.so."""
    for path in (module, PAM_WRAPPER, PAM_PERMIT):
        if not os.path.exists(path):
            return f"pam_usher: not measured ({path} is missing; make pam, and make test-deps for libpam-wrapper)"
    exchange(sock, {"method": "register", "params": {"email": EMAIL, "password": PASSWORD}})
    services = os.path.join(directory, "pam.d")
    os.makedirs(services, exist_ok=True)
    with open(os.path.join(services, "bench-usher"), "w") as file:
        file.write(f"auth required {module} socket={sock}\naccount required {PAM_PERMIT}\n")
    with open(os.path.join(services, "bench-permit"), "w") as file:
        file.write(f"auth required {PAM_PERMIT}\naccount required {PAM_PERMIT}\n")
    environment = dict(os.environ, LD_PRELOAD=PAM_WRAPPER, PAM_WRAPPER="1", PAM_WRAPPER_SERVICE_DIR=services)
    environment.pop("USHER_SOCKET", None)
    login = {"method": "login", "params": {"activate": False, "expect_email": EMAIL, "credentials": {
        "type": "email_password", "email": EMAIL, "password": PASSWORD}}}

    def pamtester(service):
        result = subprocess.run(["pamtester", service, EMAIL, "authenticate"], input=PASSWORD + "\n", text=True,
                                env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if result.returncode != 0:
            raise SystemExit(f"pamtester {service} failed ({result.returncode}): {result.stderr.strip()}")

    commands = (lambda: pamtester("bench-usher"), lambda: pamtester("bench-permit"), lambda: exchange(sock, login))
    for command in commands:  # a warm-up of each: page cache, the daemon's first login
        command()
    times = ([], [], [])
    for _ in range(runs):
        for index, command in enumerate(commands):
            started = time.perf_counter()
            command()
            times[index].append((time.perf_counter() - started) * 1000)
    usher, permit, direct = (statistics.median(t) for t in times)
    cost = usher - permit - direct
    return (f"pam_usher: pamtester with pam_usher {usher:.1f} ms (median of {runs}), with pam_permit {permit:.1f} ms, "
            f"the same login on the socket {direct:.1f} ms: the module's own cost {cost:.1f} ms (target <= 5 ms: "
            + ("met" if cost <= 5 else "NOT met") + ")")
