"""Before and after: the read and write workloads of two usherd binaries side by side, in one run.

`make bench BEFORE=<commit>` (or bench.py --before PATH) measures the usherd of another commit beside this one: both
daemons run at once with the same five users and the same local provider, and every figure is taken in the order
before, after, after, before (each binary's figure is the mean of its two runs), so that a drift of the machine's
speed during the run weighs on both alike. That is one round; `--before-rounds` rounds are made (3 by default), and
the table gives each binary's median figure and the median of the rounds' after/before ratios, with their range: on
a shared 2-core machine one round's ratio moves by up to a tenth either way, so a single round cannot tell a change of
5 % from noise. A change that must not cost performance keeps every median ratio at 0.95 or above.
"""

import json
import os
import statistics

READS = {
    "current_user": '{"id":1,"method":"current_user"}',
    "access_token": '{"id":1,"method":"access_token"}',
    "list_users/5": '{"id":1,"method":"list_users","params":{"limit":5}}',
    "hello": '{"id":1,"method":"hello"}',
}


class Comparison:
    def __init__(self, bench, before, rounds=3):
        self.bench = bench
        self.before = before
        self.rounds = rounds

    def daemon(self, name, usherd, jwt_config):
        """A daemon with five registered, logged-in users and the jwt credential; returns (socket, user ids)."""
        config = "[daemon]\npassword_hash_cost = 10\n" + jwt_config
        _, sock, _ = self.bench.start_usherd(name, config, usherd=usherd)
        return sock, self.bench.register_users(sock, 5)

    def requests_file(self, name, lines):
        path = os.path.join(self.bench.directory, name)
        with open(path, "w") as file:
            file.writelines(line + "\n" for line in lines)
        return path

    def abba(self, before, after, run):
        """`run(side, index)` for before, after, after, before, `rounds` times (index counts on across rounds); per
        round the mean of each side's two runs. Returns the rounds: [(before figures, after figures)]."""
        rounds = []
        for round_index in range(self.rounds):
            base = 4 * round_index
            first_before, first_after = run(before, base), run(after, base + 1)
            second_after, second_before = run(after, base + 2), run(before, base + 3)
            rounds.append((self.bench.mean(first_before, second_before), self.bench.mean(first_after, second_after)))
        return rounds

    def run(self):
        bench = self.bench
        logins_per_run = 5_000
        requests, jwt_config = bench.jwt_logins(4 * self.rounds * logins_per_run)
        with open(requests) as file:
            logins = file.read().splitlines()
        before = self.daemon("before", self.before, jwt_config)
        after = self.daemon("after", bench.args.usherd, jwt_config)
        print(f"before/after: {self.before} (before) beside {bench.args.usherd} (after), {bench.args.seconds:g} s per "
              "figure, in the order before, after, after, before; "
              f"{self.rounds} round{'s' if self.rounds != 1 else ''}, medians")
        rows = []
        for connections in (1, 16, 64):
            for method, line in READS.items():
                rounds = self.abba(before, after, lambda side, _: bench.load(side[0], connections, "line", line))
                rows.append((method, connections, rounds))
        # Writes: switch_user among the five users (each daemon has its own user ids), and a login with a new user
        # each (each run its own share of the requests, so that every login adds a user on both daemons).
        switch_files = {}
        for side, name in ((before, "before"), (after, "after")):
            switch_files[side[0]] = self.requests_file(f"switch-{name}.requests", (
                json.dumps({"id": 1, "method": "switch_user", "params": {"user_id": side[1][index % 5]}})
                for index in range(1000)))
        for connections in (1, 16):
            rounds = self.abba(before, after, lambda side, _: bench.load(
                side[0], connections, "lines", switch_files[side[0]]))
            rows.append(("switch_user", connections, rounds))
        login_files = [self.requests_file(f"login-{index}.requests",
                                          logins[index * logins_per_run:(index + 1) * logins_per_run])
                       for index in range(4 * self.rounds)]
        rounds = self.abba(before, after, lambda side, index: bench.load(
            side[0], 16, "lines", login_files[index], seconds=min(bench.args.seconds, 10)))
        rows.append(("login (jwt)", 16, rounds))

        print(f"{'workload':<13} {'conns':>5} | {'before req/s':>12} {'p50 µs':>7} {'p99 µs':>7} | {'after req/s':>11} "
              f"{'p50 µs':>7} {'p99 µs':>7} | {'after/before':>12} {'rounds':>11}")
        lowest = None
        for workload, connections, rounds in rows:
            old = {key: statistics.median(b[key] for b, _ in rounds) for key in rounds[0][0]}
            new = {key: statistics.median(a[key] for _, a in rounds) for key in rounds[0][1]}
            ratios = [a["rate"] / b["rate"] for b, a in rounds]
            ratio = statistics.median(ratios)
            lowest = ratio if lowest is None else min(lowest, ratio)
            errors = sum(b["errors"] + a["errors"] for b, a in rounds)
            print(f"{workload:<13} {connections:>5} | {old['rate']:>12.0f} {old['p50']:>7.0f} {old['p99']:>7.0f} | "
                  f"{new['rate']:>11.0f} {new['p50']:>7.0f} {new['p99']:>7.0f} | {ratio:>12.2f} "
                  f"{min(ratios):>5.2f}–{max(ratios):<5.2f}" + (f"  errors {errors:g}" if errors else ""))
        print(f"lowest median after/before: {lowest:.2f}")
        print()
