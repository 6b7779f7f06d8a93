#!/usr/bin/env python3
"""usherd's benchmark: the figures of the README's performance section, in one run.

Run through `make bench`, which builds release binaries, their package and the C tools first and passes their paths.
It prints first the footprint table of bench/footprint.py (binary sizes, Installed-Size, idle memory). Every workload
is measured against the line-echo server (the physical limit of one NDJSON round trip) and `ssh-agent -D` (a
well-known local agent) in the same run, interleaved, and reported as ratios, because these machines are shared and
noisy. Needs `cryptography` (for the JWTs of the login workload): `make bench` runs it with the test virtual
environment's Python.
"""

import argparse
import base64
import hashlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils

from compare import Comparison
from footprint import Footprint
import pam_cost


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Bench:
    def __init__(self, args):
        self.args = args
        self.directory = tempfile.mkdtemp(prefix="usher-bench-", dir="/tmp")
        self.processes = []

    # -- processes ---------------------------------------------------------------------------------------------

    def spawn(self, argv, **kwargs):
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)
        self.processes.append(process)
        return process

    def stop(self, process):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.remove(process)

    def close(self):
        for process in list(self.processes):
            self.stop(process)
        shutil.rmtree(self.directory, ignore_errors=True)

    @staticmethod
    def wait_for_socket(path, process, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SystemExit(f"{process.args[0]} exited with {process.returncode}")
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                    probe.connect(path)
                    return
            except OSError:
                time.sleep(0.005)
        raise SystemExit(f"nothing listens on {path} after {timeout} s")

    def start_usherd(self, name, config="", usherd=None):
        state = os.path.join(self.directory, name)
        os.makedirs(state, exist_ok=True)
        config_path = os.path.join(state, "usherd.toml")
        with open(config_path, "w") as file:
            file.write(config)
        sock = os.path.join(state, "usher.sock")
        argv = [usherd or self.args.usherd, "--config", config_path, "--socket", sock, "--state-directory",
                os.path.join(state, "state"), "--log-level", "warning"]
        started = time.monotonic()
        process = self.spawn(argv)
        self.wait_for_socket(sock, process)
        # Answering, not only accepting: the first request is the start-up time a client sees.
        self.call(sock, {"method": "status"})
        return process, sock, time.monotonic() - started

    # -- the protocol ------------------------------------------------------------------------------------------

    @staticmethod
    def exchange(path, message, end):
        """Sends `message` (bytes) on a new connection to `path`; returns what comes back up to `end`, excluded."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(path)
            connection.sendall(message)
            data = b""
            while not data.endswith(end):
                chunk = connection.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
        return data.removesuffix(end)

    @classmethod
    def call(cls, path, request):
        answer = json.loads(cls.exchange(path, (json.dumps(request) + "\n").encode(), b"\n"))
        if "error" in answer:
            raise SystemExit(f"{request['method']} failed: {answer['error']}")
        return answer["result"]

    def load(self, path, connections, mode, *arguments, seconds=None, epoll=False):
        # -t: a thread per connection, as separate client programs are (and as the figures were measured).
        threads = [] if epoll else ["-t"]
        argv = [self.args.rtload, *threads, path, str(connections), str(seconds or self.args.seconds), mode, *arguments]
        output = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.split()
        figures = dict(zip(output[0::2], output[1::2]))
        return {key: float(value) for key, value in figures.items()}

    def register_users(self, sock, count):
        """Registers `count` email/password accounts and logs each in; returns their user ids, in order."""
        user_ids = []
        for index in range(count):
            email = f"p{index}@example.com"
            self.call(sock, {"method": "register", "params": {"email": email, "password": "secret123"}})
            login = self.call(sock, {"method": "login", "params": {"credentials": {
                "type": "email_password", "email": email, "password": "secret123"}}})
            user_ids.append(login["user"]["id"])
        return user_ids

    # -- workloads ---------------------------------------------------------------------------------------------

    def reads(self, few, many, echo, agent):
        """The read workloads at 1, 16 and 64 connections. For each figure, in turn: ssh-agent (its runs before and
        after are averaged), the echo server, then usherd with a handful of users (`few`) and with many users (`many`)
        in the order few, many, many, few (each daemon's figure is the mean of its two runs), so that every ratio
        compares runs seconds apart and a drift of the machine's speed during them weighs on both sides alike. Returns
        the rows of the two daemons."""
        requests = {
            "current_user": '{"id":1,"method":"current_user"}',
            "access_token": '{"id":1,"method":"access_token"}',
            # The whole list of a handful of users (not asked of the large device: tens of megabytes); a page of five,
            # on both devices, to compare the same request.
            "list_users": '{"id":1,"method":"list_users"}',
            "list_users/5": '{"id":1,"method":"list_users","params":{"limit":5}}',
        }
        few_rows, many_rows = [], []
        for connections in (1, 16, 64):
            agent_before = self.load(agent, connections, "sshagent")
            for method, line in requests.items():
                echo_figures = self.load(echo, connections, "line", line)
                few_figures = self.load(few, connections, "line", line)
                many_figures = None
                if method != "list_users":
                    many_figures = self.mean(self.load(many, connections, "line", line),
                                             self.load(many, connections, "line", line))
                    few_figures = self.mean(few_figures, self.load(few, connections, "line", line))
                agent_after = self.load(agent, connections, "sshagent")
                agent_figures = self.mean(agent_before, agent_after)
                few_rows.append((method, connections, few_figures, echo_figures, agent_figures))
                if many_figures:
                    many_rows.append((method, connections, many_figures, echo_figures, agent_figures))
                agent_before = agent_after
        return few_rows, many_rows

    def varlink_reads(self, sock):
        """`current_user` at 16 connections on the Varlink socket beside the same on the main socket, of one daemon, in
        the order lines, Varlink, Varlink, lines (each figure the mean of its two runs), so that the ratio compares runs
        seconds apart."""
        varlink_sock = os.path.join(os.path.dirname(sock), "io.usher.Session")
        line = '{"id":1,"method":"current_user"}'
        call = '{"method":"io.usher.Session.CurrentUser"}'
        first_lines = self.load(sock, 16, "line", line)
        varlink = self.mean(self.load(varlink_sock, 16, "varlink", call), self.load(varlink_sock, 16, "varlink", call))
        lines = self.mean(first_lines, self.load(sock, 16, "line", line))
        return (f"Varlink: current_user over 16 connections {varlink['rate']:.0f} req/s (p50 {varlink['p50']:.0f} µs, "
                f"p99 {varlink['p99']:.0f} µs), newline-delimited JSON {lines['rate']:.0f} req/s (p50 {lines['p50']:.0f} "
                f"µs, p99 {lines['p99']:.0f} µs): {varlink['rate'] / lines['rate']:.2f} × the NDJSON rate"
                + (f"; errors {varlink['errors']:.0f}" if varlink["errors"] else ""))

    def userdb_reads(self, sock, label, name="p0", uid=60000):
        """`GetUserRecord` by user name and by uid over 16 connections on the user database socket
        (`io.systemd.UserDatabase`, `[unix_users]`), what every NSS lookup through nss-systemd asks; the issue's target
        is 20,000 a second. Each figure the mean of two runs."""
        userdb_sock = os.path.join(os.path.dirname(sock), "io.usher.Users")
        by_name = ('{"method":"io.systemd.UserDatabase.GetUserRecord",'
                   f'"parameters":{{"userName":"{name}","service":"io.usher.Users"}}}}')
        by_uid = ('{"method":"io.systemd.UserDatabase.GetUserRecord",'
                  f'"parameters":{{"uid":{uid},"service":"io.usher.Users"}}}}')
        name_figures = self.mean(self.load(userdb_sock, 16, "varlink", by_name),
                                 self.load(userdb_sock, 16, "varlink", by_name))
        uid_figures = self.mean(self.load(userdb_sock, 16, "varlink", by_uid),
                                self.load(userdb_sock, 16, "varlink", by_uid))
        name, uid = name_figures, uid_figures
        errors = name["errors"] + uid["errors"]
        return (f"io.systemd.UserDatabase, {label}: GetUserRecord over 16 connections by userName {name['rate']:.0f} req/s "
                f"(p50 {name['p50']:.0f} µs, p99 {name['p99']:.0f} µs), by uid {uid['rate']:.0f} req/s (p50 "
                f"{uid['p50']:.0f} µs, p99 {uid['p99']:.0f} µs); target ≥ 20,000 req/s: "
                + ("met" if min(name["rate"], uid["rate"]) >= 20000 else "NOT met")
                + (f"; errors {errors:.0f}" if errors else ""))

    @staticmethod
    def mean(first, second):
        """The mean of two runs of one workload (latencies too: the mean of the two runs' percentiles), so that a
        burst of load from elsewhere on the machine during either run does not decide a ratio alone."""
        return {key: (first[key] + second[key]) / 2 for key in first}

    def switches(self, usherd, echo, agent, user_ids):
        lines = os.path.join(self.directory, "switch.requests")
        with open(lines, "w") as file:
            for index in range(1000):
                file.write(json.dumps({"id": 1, "method": "switch_user",
                                       "params": {"user_id": user_ids[index % len(user_ids)]}}) + "\n")
        rows = []
        for connections in (1, 16, 64):
            agent_before = self.load(agent, connections, "sshagent")
            echo_figures = self.load(echo, connections, "lines", lines)
            usherd_figures = self.load(usherd, connections, "lines", lines)
            agent_after = self.load(agent, connections, "sshagent")
            rows.append(("switch_user", connections, usherd_figures, echo_figures,
                         self.mean(agent_before, agent_after)))
        return rows

    def page_through(self, path, process, times, limit=500):
        """Pages through every user `times` times, as a client following `next`; returns the RSS after."""
        for _ in range(times):
            after = None
            while True:
                params = {"limit": limit}
                if after:
                    params["after"] = after
                page = self.call(path, {"method": "list_users", "params": params})
                after = page.get("next")
                if not after:
                    break
        return self.rss_mib(process)

    @staticmethod
    def rss_mib(process, field="VmRSS:"):
        with open(f"/proc/{process.pid}/status") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
        return float("nan")

    @classmethod
    def anonymous_mib(cls, process):
        """The part of the RSS that is the daemon's own memory (not the pages of its binary and libraries)."""
        return cls.rss_mib(process, "RssAnon:")

    @staticmethod
    def cpu_seconds(process):
        with open(f"/proc/{process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def seed(self, name, count, profiles=False, usherd=None):
        """A daemon's state directory with `count` logged-in users, written straight into its database (the schema
        made by `usherd`, default --usherd); with `profiles`, each has a full profile and some custom data."""
        process, sock, _ = self.start_usherd(name, usherd=usherd)
        self.stop(process)
        database = sqlite3.connect(os.path.join(self.directory, name, "state", "usher.sqlite"))
        now = int(time.time() * 1000)
        rows = []
        for index in range(count):
            # Sizes as the local provider makes them: a 34-character user id, a 42-character subject, a signed JWT
            # access token of 368 characters and a 43-character refresh token.
            user_id = "u_" + hashlib.sha256(f"bench{index}".encode()).hexdigest()[:32]
            subject = b64url(hashlib.sha256(f"subject{index}".encode()).digest())[:42]
            access = b64url(os.urandom(276))
            refresh = b64url(os.urandom(32))
            profile, custom = "{}", "{}"
            if profiles:
                # A full OpenID Connect profile (~330 bytes) and a little custom data, as a provider gives them.
                profile = json.dumps({
                    "email": f"user{index}@example.com", "email_verified": True, "family_name": "Example",
                    "given_name": f"User{index}", "locale": "en-GB", "name": f"User {index}",
                    "picture": f"https://cdn.example.com/avatars/{user_id}.png",
                    "preferred_username": f"user{index}", "updated_at": now // 1000, "zoneinfo": "Europe/London",
                }, sort_keys=True, separators=(",", ":"))
                custom = json.dumps({"groups": ["staff", f"team-{index % 50}"], "tenant": "acme"},
                                    sort_keys=True, separators=(",", ":"))
            rows.append((user_id, "local", subject, "jwt", f"user{index}@example.com",
                         f"User {index}", "logged_in", index + 1, now, now, now, index + 1, access, now,
                         now + 30 * 60_000, refresh, now + 60 * 86_400_000, None, profile, custom))
        database.executemany(
            "INSERT INTO user (id, provider, subject, kind, email, name, state, added_generation, created_at, "
            "last_login_at, last_active_at, active_generation, access_token, access_token_issued_at, "
            "access_token_expires_at, refresh_token, refresh_token_expires_at, provider_data, profile, custom_data) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        database.execute("UPDATE meta SET value = ? WHERE key = 'generation'", (count,))
        database.commit()
        database.close()

    def jwt_logins(self, count):
        """A JWK set and `count` login requests with the local provider's jwt credential, one new user each."""
        key = ec.generate_private_key(ec.SECP256R1())
        numbers = key.public_key().public_numbers()
        jwks = {"keys": [{"kty": "EC", "crv": "P-256", "kid": "bench", "alg": "ES256", "use": "sig",
                          "x": b64url(numbers.x.to_bytes(32, "big")), "y": b64url(numbers.y.to_bytes(32, "big"))}]}
        jwks_path = os.path.join(self.directory, "jwks.json")
        with open(jwks_path, "w") as file:
            json.dump(jwks, file)
        header = b64url(json.dumps({"alg": "ES256", "kid": "bench", "typ": "JWT"}).encode())
        now = int(time.time())
        requests = os.path.join(self.directory, "login.requests")
        with open(requests, "w") as file:
            for index in range(count):
                claims = b64url(json.dumps({"iss": "bench", "aud": "usher", "sub": f"login{index}", "iat": now,
                                            "exp": now + 3600, "email": f"login{index}@example.com"}).encode())
                signed = f"{header}.{claims}".encode()
                r, s = utils.decode_dss_signature(key.sign(signed, ec.ECDSA(hashes.SHA256())))
                token = f"{header}.{claims}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"
                file.write(json.dumps({"id": 1, "method": "login",
                                       "params": {"credentials": {"type": "jwt", "token": token}}}) + "\n")
        config = (f'[providers.local]\ntype = "local"\n[providers.local.jwt]\nissuer = "bench"\naudience = "usher"\n'
                  f'jwks_file = "{jwks_path}"\nalgorithms = ["ES256"]\n')
        return requests, config

    def cli_wall_time(self, sock, agent_path):
        """`usher token` against `ssh-add -l`: wall time of the whole process, run alternately (A B A B ...) so that
        both see the same machine, min/median/max of each and the ratio of the medians. Returns the line to print.

        The token must really be printed (exit 0, one line): timing an error path would flatter the CLI."""
        environment = dict(os.environ, USHER_SOCKET=sock, SSH_AUTH_SOCK=agent_path)
        usher = [self.args.usher, "token"]
        check = subprocess.run(usher, capture_output=True, text=True, env=environment)
        if check.returncode != 0 or check.stdout.count("\n") != 1:
            raise SystemExit(f"usher token failed ({check.returncode}): {check.stderr.strip()}")
        times = ([], [])
        for _ in range(self.args.cli_runs):
            for index, argv in enumerate((usher, ["ssh-add", "-l"])):
                started = time.perf_counter()
                subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment)
                times[index].append((time.perf_counter() - started) * 1000)
        (token, agent) = ((min(t), statistics.median(t), max(t)) for t in times)
        return (f"usher token: {token[1]:.1f} ms wall (median of {self.args.cli_runs}; min {token[0]:.1f}, max "
                f"{token[2]:.1f}); ssh-add -l: {agent[1]:.1f} ms (min {agent[0]:.1f}, max {agent[2]:.1f}); "
                f"ratio {token[1] / agent[1]:.2f} (target <= 2)")

    def git_helper_wall_time(self, sock):
        """The time git spends in usher as its credential helper on a `get` (the whole `usher git-credential get`
        process, git's request on stdin) against `usher token`, run alternately; the target is 2x. Returns the line to
        print. The helper must really answer a password: timing its no-token path would flatter it."""
        environment = dict(os.environ, USHER_SOCKET=sock)
        request = "protocol=https\nhost=git.example.com\n\n"
        helper = [self.args.usher, "git-credential", "--host", "git.example.com", "get"]
        check = subprocess.run(helper, input=request, capture_output=True, text=True, env=environment)
        if check.returncode != 0 or "password=" not in check.stdout:
            raise SystemExit(f"usher git-credential get failed ({check.returncode}): {check.stderr.strip()}")
        times = ([], [])
        for _ in range(self.args.cli_runs):
            for index, argv in enumerate((helper, [self.args.usher, "token"])):
                started = time.perf_counter()
                subprocess.run(argv, input=request, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=environment, text=True)
                times[index].append((time.perf_counter() - started) * 1000)
        (get, token) = ((min(t), statistics.median(t), max(t)) for t in times)
        return (f"usher git-credential get: {get[1]:.1f} ms wall (median of {self.args.cli_runs}; min {get[0]:.1f}, "
                f"max {get[2]:.1f}); usher token: {token[1]:.1f} ms; ratio {get[1] / token[1]:.2f} (target <= 2)")

    # -- the run -----------------------------------------------------------------------------------------------

    def memory(self):
        """`--memory-only`: idle memory at `--users` users without and with profiles, and after paging through them
        (list_users, limit 500) twenty times and reading the whole list once."""
        print(f"usherd memory with {self.args.users:,} users: {self.args.usherd}")
        for profiles in (False, True):
            name = "profiles" if profiles else "bare"
            self.seed(name, self.args.users, profiles=profiles)
            process, sock, startup = self.start_usherd(name)
            time.sleep(2)
            idle, anonymous = self.rss_mib(process), self.anonymous_mib(process)
            start = time.monotonic()
            paged = self.page_through(sock, process, times=20)
            paging_seconds = (time.monotonic() - start) / 20
            whole = self.call(sock, {"method": "list_users"})
            after_whole = self.rss_mib(process)
            peak = self.rss_mib(process, "VmHWM:")
            print(f"{name:>8}: first answer after {startup:.2f} s; idle RSS {idle:.0f} MiB ({anonymous:.0f} MiB "
                  f"anonymous); after paging 20 times (limit 500, {paging_seconds:.2f} s a pass): {paged:.0f} MiB; "
                  f"after the whole list ({len(whole['users']):,} users) once: {after_whole:.0f} MiB; "
                  f"peak {peak:.0f} MiB")
            self.stop(process)

    def run(self):
        if self.args.memory_only:
            self.memory()
            return
        if not self.args.before_only:
            Footprint(self).run()
        if self.args.footprint_only:
            return
        echo_path = os.path.join(self.directory, "echo.sock")
        echo = self.spawn([self.args.lineecho, echo_path])
        self.wait_for_socket(echo_path, echo)
        agent_path = os.path.join(self.directory, "agent.sock")
        agent = self.spawn(["ssh-agent", "-D", "-a", agent_path])
        self.wait_for_socket(agent_path, agent)

        print(f"usherd benchmark: {self.args.usherd}, {self.args.seconds:g} s per figure, lockstep connections "
              f"(rtload -t: a thread per connection), {os.cpu_count()} cores")
        # The client is not the bottleneck: the same client drives the echo server much faster than usherd (the echo
        # columns), and its single-thread epoll mode faster still.
        fast = self.load(echo_path, 16, "line", '{"id":1,"method":"current_user"}', epoll=True)
        print(f"client check: rtload (one epoll thread) drives the echo server at {fast['rate']:.0f} req/s over 16 "
              f"connections")
        print()
        if self.args.before:
            Comparison(self, self.args.before, self.args.before_rounds).run()
            if self.args.before_only:
                return
        # With [unix_users]: its users are Unix users too (the GetUserRecord workload; uids from 60000).
        usherd, sock, _ = self.start_usherd("few", "[daemon]\npassword_hash_cost = 10\n[unix_users]\nenabled = true\n")
        user_ids = self.register_users(sock, 5)

        # The large device runs alongside the small one (idle while the other is measured).
        self.seed("many", self.args.users)
        many, many_sock, startup = self.start_usherd("many")
        time.sleep(2)
        cpu_before = self.cpu_seconds(many)
        time.sleep(5)
        idle_cpu = (self.cpu_seconds(many) - cpu_before) / 5 * 100
        idle_rss = self.rss_mib(many)
        idle_anonymous = self.anonymous_mib(many)

        rows, many_rows = self.reads(sock, many_sock, echo_path, agent_path)
        varlink = self.varlink_reads(sock)
        userdb = self.userdb_reads(sock, "5 users")
        busy_rss = self.rss_mib(many)
        self.stop(many)
        rows += self.switches(sock, echo_path, agent_path, user_ids)
        self.print_rows("a handful of users (5)", rows)
        print(varlink)
        print(userdb)
        print()
        cli = self.cli_wall_time(sock, agent_path)
        git_helper = self.git_helper_wall_time(sock)
        self.stop(usherd)
        self.print_rows(f"{self.args.users:,} users (seeded into the database; measured in turn with the 5-user daemon)",
                        many_rows)
        # The same lookups with as many Unix users: each gets its account at start (turned on for users already there).
        self.seed("userdb", self.args.users)
        userdb_many, userdb_sock, userdb_startup = self.start_usherd(
            "userdb", '[unix_users]\nenabled = true\nuid_range = "100000-299999"\n')
        print(self.userdb_reads(userdb_sock, f"{self.args.users:,} users", name="user500", uid=100500)
              + f"; start-up, every account allocated: {userdb_startup:.2f} s")
        self.stop(userdb_many)
        pam_daemon, pam_sock, _ = self.start_usherd("pam", pam_cost.CONFIG)
        print(pam_cost.measure(self.directory, pam_sock, self.args.pam_module, self.args.cli_runs))
        self.stop(pam_daemon)
        few_rates = {(method, connections): figures["rate"] for method, connections, figures, _, _ in rows}
        print(f"read rates with {self.args.users:,} users as a share of their rates with 5 users: " + ", ".join(
            f"{method}@{connections} {figures['rate'] / few_rates[(method, connections)]:.2f}"
            for method, connections, figures, _, _ in many_rows if (method, connections) in few_rates))
        print(f"start-up with {self.args.users:,} users: first answer after {startup:.2f} s; idle: {idle_cpu:.1f} % CPU, "
              f"RSS {idle_rss:.0f} MiB ({idle_anonymous:.0f} MiB anonymous, the rest pages of the binary); "
              f"RSS after the read workloads above: {busy_rss:.0f} MiB")
        print()

        requests, config = self.jwt_logins(self.args.logins)
        self.seed("logins", self.args.login_users)
        with open(os.path.join(self.directory, "logins", "usherd.toml"), "w") as file:
            file.write(config)
        usherd, sock, _ = self.start_usherd("logins", config)
        time.sleep(2)
        idle_rss_login_users = self.rss_mib(usherd)
        idle_anonymous_login_users = self.anonymous_mib(usherd)
        paging_rss = self.page_through(sock, usherd, times=20)
        print(f"idle RSS with {self.args.login_users:,} users: {idle_rss_login_users:.0f} MiB "
              f"({idle_anonymous_login_users:.0f} MiB anonymous); after paging through "
              f"them 20 times (limit 500): {paging_rss:.0f} MiB (+{paging_rss - idle_rss_login_users:.0f} MiB)")
        figures = self.load(sock, 16, "lines", requests, seconds=min(self.args.seconds, 10))
        self.stop(usherd)
        print(f"login (jwt credential, new user each) over 16 connections with {self.args.login_users:,} users: "
              f"{figures['rate']:.0f}/s acknowledged, p50 {figures['p50'] / 1000:.2f} ms, "
              f"p99 {figures['p99'] / 1000:.2f} ms, errors {figures['errors']:.0f}")
        print(cli)
        print(git_helper)

    @staticmethod
    def print_rows(title, rows):
        print(title)
        print(f"{'method':<13} {'conns':>5} {'req/s':>9} {'p50 µs':>8} {'p99 µs':>8} | {'echo req/s':>10} {'p50':>5} "
              f"{'p99':>5} | {'agent req/s':>11} | {'×echo':>6} {'×agent':>6} {'p99×echo':>8} {'p50×echo':>8}")
        for method, connections, usherd, echo, agent in rows:
            print(f"{method:<13} {connections:>5} {usherd['rate']:>9.0f} {usherd['p50']:>8.0f} {usherd['p99']:>8.0f} | "
                  f"{echo['rate']:>10.0f} {echo['p50']:>5.0f} {echo['p99']:>5.0f} | {agent['rate']:>11.0f} | "
                  f"{usherd['rate'] / echo['rate']:>6.2f} {usherd['rate'] / agent['rate']:>6.2f} "
                  f"{usherd['p99'] / max(echo['p99'], 1):>8.2f} {usherd['p50'] / max(echo['p50'], 1):>8.2f}"
                  + (f"  errors {usherd['errors']:.0f}" if usherd["errors"] else ""))
        print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--usherd", required=True)
    parser.add_argument("--usher", required=True)
    parser.add_argument("--rtload", required=True)
    parser.add_argument("--lineecho", required=True)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--login-users", type=int, default=20_000)
    parser.add_argument("--logins", type=int, default=20_000)
    parser.add_argument("--cli-runs", type=int, default=50)
    parser.add_argument("--pam-module", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".build",
                                                             "pam", "pam_usher.so"),
                        help="pam_usher.so, for the module's cost on top of a login (make pam builds it)")
    parser.add_argument("--deb", help="the usher package of these binaries, for its Installed-Size (make bench builds it)")
    parser.add_argument("--footprint-only", action="store_true",
                        help="only the footprint table: binary sizes, Installed-Size, idle memory (bench/footprint.py)")
    parser.add_argument("--baseline-usherd", help="another usherd (an earlier release) for the footprint table")
    parser.add_argument("--baseline-usher", help="its usher")
    parser.add_argument("--baseline-deb", help="its package")
    parser.add_argument("--before", help="the usherd of an earlier commit: its read and write workloads side by side with "
                        "--usherd's, in one run (bench/compare.py; make bench BEFORE=<commit> builds it)")
    parser.add_argument("--before-only", action="store_true", help="with --before: that table only")
    parser.add_argument("--before-rounds", type=int, default=3,
                        help="with --before: rounds of before, after, after, before per figure (medians)")
    parser.add_argument("--memory-only", action="store_true",
                        help="only idle and list_users paging memory at --users users, without and with profiles")
    bench = Bench(parser.parse_args())
    try:
        bench.run()
    finally:
        bench.close()


if __name__ == "__main__":
    sys.exit(main())
