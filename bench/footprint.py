"""usher's footprint beside the programs it sits with on a device (issue 25): the stripped binaries, the package's
Installed-Size, and usherd's idle memory with 10, 20,000 and 100,000 users, next to `ssh-agent` and the Debian
packages of the same kind.

Used by bench.py (`make bench` prints this table first; `bench/bench.py --footprint-only` prints only it). With
`--baseline-usherd`/`--baseline-usher` (and `--baseline-deb`) the same figures of other binaries, such as an
earlier release, are printed beside, measured in the same run.
"""

import math
import os
import shutil
import stat
import subprocess
import tempfile
import time

# The targets of issue 25. Sizes in MB of 1,000,000 bytes (as the issue writes them: "usherd 87.4 MB, stripped"),
# Installed-Size in KiB (dpkg's unit), memory in MiB.
TARGET_USHERD_BYTES = 20_000_000
TARGET_USHER_BYTES = 10_000_000
TARGET_INSTALLED_KIB = 35_000
TARGET_IDLE_MIB = {10: 16, 20_000: 40, 100_000: 120}

# The Debian packages usher sits beside, and their Installed-Size in Debian 12 (amd64) as issue 25 quotes them: used
# only when `apt-cache show` cannot say (no package lists on the machine), and then labelled so.
PEERS = {"sssd-kcm": 454, "oidc-agent-cli": 759, "gnome-online-accounts": 314, "openssh-client": 5801}


def stripped_size(binary):
    """The size of BINARY as the package installs it: packaging/install-stripped.sh's objcopy, without the debuglink."""
    with tempfile.TemporaryDirectory(prefix="usher-footprint-") as directory:
        stripped = os.path.join(directory, "stripped")
        subprocess.run(["objcopy", "--strip-all", "--remove-section=.comment", "--remove-section=.note", binary,
                        stripped], check=True)
        return os.path.getsize(stripped)


def installed_size_of_tree(root):
    """Installed-Size in KiB as dpkg-gencontrol computes it over a package's tree (ROOT included): each regular file or
    symbolic link its size rounded up to a KiB (a hard-linked file once), every other object (directories) 1 KiB."""
    total, seen = 0, set()
    for path in [root] + [os.path.join(d, n) for d, names, files in os.walk(root) for n in names + files]:
        status = os.lstat(path)
        if stat.S_ISREG(status.st_mode) or stat.S_ISLNK(status.st_mode):
            if status.st_nlink > 1 and (status.st_dev, status.st_ino) in seen:
                continue
            seen.add((status.st_dev, status.st_ino))
            total += math.ceil(status.st_size / 1024)
        else:
            total += 1
    return total


def installed_size(deb, binaries):
    """The package's Installed-Size in KiB and where it comes from: the control field of DEB when it exists, else
    dpkg-gencontrol's sum over the stripped BINARIES alone (a lower bound: the package adds units, documentation,
    manual pages and its directories)."""
    if deb and os.path.exists(deb):
        field = subprocess.run(["dpkg-deb", "-f", deb, "Installed-Size"], check=True, capture_output=True,
                               text=True).stdout.strip()
        return int(field), f"from {os.path.basename(deb)}"
    with tempfile.TemporaryDirectory(prefix="usher-footprint-") as directory:
        for binary in {os.path.realpath(binary) for binary in binaries}:
            subprocess.run(["objcopy", "--strip-all", "--remove-section=.comment", "--remove-section=.note", binary,
                            os.path.join(directory, os.path.basename(binary))], check=True)
        return installed_size_of_tree(directory) - 1, "the stripped binaries alone, summed as dpkg-gencontrol does " \
            "(no .deb given: a lower bound)"


def peer_installed_sizes():
    """Installed-Size of each peer package: the candidate version's field from `apt-cache show`, else issue 25's
    figure. Returns (package, KiB, source) rows."""
    rows = []
    for package, quoted in PEERS.items():
        shown = subprocess.run(["apt-cache", "show", "--no-all-versions", package], capture_output=True, text=True)
        field = [line.split(":", 1)[1].strip() for line in shown.stdout.splitlines()
                 if line.startswith("Installed-Size:")]
        if shown.returncode == 0 and field:
            rows.append((package, int(field[0]), "apt-cache show"))
        else:
            rows.append((package, quoted, "issue 25's figure (not in this machine's package lists)"))
    return rows


def memory(pid):
    """VmRSS and RssAnon (from /proc/PID/status), Pss (from smaps_rollup), and Code: how much of the program's own
    executable mapping is resident (from smaps; what the link order of packaging/usherd.order keeps small), in MiB."""
    figures = {"Code": 0.0}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key = line.split(":", 1)[0]
            if key in ("VmRSS", "RssAnon"):
                figures[key] = int(line.split()[1]) / 1024
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    figures["Pss"] = int(line.split()[1]) / 1024
    except OSError:
        figures["Pss"] = float("nan")
    executable = os.path.realpath(f"/proc/{pid}/exe")
    in_code = False
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if fields and not fields[0].endswith(":"):
                in_code = fields[-1] == executable and fields[1] == "r-xp"
            elif in_code and fields[0] == "Rss:":
                figures["Code"] += int(fields[1]) / 1024
    return figures


def order_file_coverage(usherd, order_file):
    """How many of the order file's sections named after a function (.text.<symbol>) are functions of `usherd`
    (unstripped): what is left of the link order since `make order-file` last wrote it."""
    with open(order_file) as file:
        named = [line.strip()[len(".text."):] for line in file if line.startswith(".text.") and ".L" not in line]
    output = subprocess.run(["nm", "--defined-only", usherd], check=True, capture_output=True, text=True).stdout
    functions = {fields[2] for fields in (line.split() for line in output.splitlines()) if len(fields) == 3}
    return sum(1 for name in named if name in functions), len(named)


def mb(size):
    return f"{size / 1_000_000:.1f} MB"


def verdict(value, target):
    return "ok" if value <= target else "OVER"


class Footprint:
    """Measures and prints the footprint table, with the helpers of a `Bench` (seeding, starting usherd)."""

    def __init__(self, bench):
        self.bench = bench
        self.args = bench.args

    def idle_memory(self, usherd, label):
        """usherd's idle memory with each user count of the targets: the database seeded directly (bench.seed), the
        daemon started, its first answer awaited, then two seconds left for start-up's pages to be given back (the
        same wait as the bench's other idle figures)."""
        figures = {}
        for count in TARGET_IDLE_MIB:
            name = f"footprint-{label.replace(' ', '-')}-{count}"
            self.bench.seed(name, count, usherd=usherd)
            process, _, startup = self.bench.start_usherd(name, usherd=usherd)
            time.sleep(2)
            figures[count] = dict(memory(process.pid), startup=startup)
            self.bench.stop(process)
        return figures

    def agent_memory(self):
        path = os.path.join(self.bench.directory, "footprint-agent.sock")
        agent = self.bench.spawn(["ssh-agent", "-D", "-a", path])
        self.bench.wait_for_socket(path, agent)
        time.sleep(2)
        figures = memory(agent.pid)
        self.bench.stop(agent)
        return figures

    def measure(self, label, usherd, usher, deb):
        # One program (this build: make's .build/programs has both names link to the release usherd) or two.
        one_file = os.path.samefile(usherd, usher)
        sizes = {"usherd": stripped_size(usherd), "usher": None if one_file else stripped_size(usher)}
        installed, source = installed_size(deb, [usherd, usher])
        return {"label": label, "sizes": sizes, "installed": installed, "installed_source": source,
                "memory": self.idle_memory(usherd, label)}

    def run(self):
        columns = []
        if self.args.baseline_usherd and self.args.baseline_usher:
            columns.append(self.measure("baseline", self.args.baseline_usherd, self.args.baseline_usher,
                                        self.args.baseline_deb))
        columns.append(self.measure("this build", self.args.usherd, self.args.usher, self.args.deb))
        agent = shutil.which("ssh-agent")
        agent_memory = self.agent_memory()
        self.print(columns, agent, agent_memory)

    def print(self, columns, agent, agent_memory):
        print("footprint (issue 25): stripped binaries, the package's Installed-Size, usherd's idle memory")
        head = "".join(f" | {column['label']:>22}" for column in columns)
        print(f"{'':<34}{head} | target")
        print(f"{'usherd, stripped':<34}" + "".join(
            f" | {mb(c['sizes']['usherd']):>11} {verdict(c['sizes']['usherd'], TARGET_USHERD_BYTES):>10}"
            for c in columns) + f" | <= {mb(TARGET_USHERD_BYTES)}")
        print(f"{'usher, stripped':<34}" + "".join(
            f" | {'= usherd':>11} {'one file':>10}" if c['sizes']['usher'] is None else
            f" | {mb(c['sizes']['usher']):>11} {verdict(c['sizes']['usher'], TARGET_USHER_BYTES):>10}"
            for c in columns) + f" | <= {mb(TARGET_USHER_BYTES)}")
        print(f"{'package Installed-Size':<34}" + "".join(
            f" | {c['installed']:>7,} KiB {verdict(c['installed'], TARGET_INSTALLED_KIB):>10}" for c in columns)
            + f" | <= {TARGET_INSTALLED_KIB:,} KiB")
        for count, target in TARGET_IDLE_MIB.items():
            print(f"{f'usherd idle, {count:,} users: RSS':<34}" + "".join(
                f" | {c['memory'][count]['VmRSS']:>7.1f} MiB {verdict(c['memory'][count]['VmRSS'], target):>10}"
                for c in columns) + f" | <= {target} MiB")
            print(f"{'  Pss / anonymous / own code':<34}" + "".join(
                f" | {c['memory'][count]['Pss']:>6.1f} / {c['memory'][count]['RssAnon']:>5.1f} / "
                f"{c['memory'][count]['Code']:>5.1f}" for c in columns) + " |")
            print(f"{'  first answer after start':<34}" + "".join(
                f" | {c['memory'][count]['startup']:>8.2f} s{'':>12}" for c in columns) + " |")
        for column in columns:
            print(f"Installed-Size of {column['label']}: {column['installed_source']}")
            if column["sizes"]["usher"] is None:
                print(f"usher of {column['label']}: usherd under another name (the package installs a hard link), no "
                      "bytes of its own; the CLI's own code is in usherd's size")
        order_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "packaging", "usherd.order")
        matched, named = order_file_coverage(self.args.usherd, order_file)
        print(f"link order (packaging/usherd.order): {matched:,} of its {named:,} functions are in this usherd"
              + ("" if matched >= 0.9 * named else "; stale: make order-file writes it again"))
        if agent:
            print(f"ssh-agent ({agent}): {mb(os.path.getsize(agent))} as installed (stripped); idle RSS "
                  f"{agent_memory['VmRSS']:.1f} MiB, Pss {agent_memory['Pss']:.1f} MiB, anonymous "
                  f"{agent_memory['RssAnon']:.1f} MiB")
        print("Installed-Size of the packages usher sits beside: " + ", ".join(
            f"{package} {size:,} KiB ({source})" for package, size, source in peer_installed_sizes()))
        print()
