"""systemd-logind's RemoveIPC on a bare host: with it (systemd's default), a user's last logout removes the user's
/dev/shm files and System V segments, so a job still running (a SLURM step, a nohup'd training) fails with
`could not unlink the shared memory file` or loses its segments (mlcommons/storage#528). Root and system users
(uid up to SYS_UID_MAX, 999 by default) are exempt.

Read from logind.conf and its drop-ins as systemd reads them: the main file, then every `*.conf` of the drop-in
directories in file-name order (a name in /etc replaces the same name in /run and /usr/lib), the last value wins.
"""

from __future__ import annotations

import os

MAIN = "etc/systemd/logind.conf"
DROP_IN_DIRS = ("usr/lib/systemd/logind.conf.d", "usr/local/lib/systemd/logind.conf.d", "run/systemd/logind.conf.d",
                "etc/systemd/logind.conf.d")  # fmt: skip
YES, NO = ("yes", "true", "on", "1"), ("no", "false", "off", "0")


def _setting(path: str) -> tuple[bool, str] | None:
    """The last RemoveIPC= of a file's [Login] section: (value, 'path:line'); None when it sets none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read(1 << 20).splitlines()
    except OSError:
        return None
    found, section = None, None
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        key, _, value = line.partition("=")
        if section == "Login" and key.strip() == "RemoveIPC" and value.strip().lower() in YES + NO:
            found = (value.strip().lower() in YES, f"{path}:{number}")
    return found


def _files(root: str) -> list[str]:
    drop_ins: dict[str, str] = {}
    for directory in DROP_IN_DIRS:
        try:
            names = os.listdir(os.path.join(root, directory))
        except OSError:
            continue
        for name in names:
            if name.endswith(".conf"):
                drop_ins[name] = os.path.join(root, directory, name)  # a later directory replaces an earlier one
    return [os.path.join(root, MAIN)] + [drop_ins[name] for name in sorted(drop_ins)]


def sys_uid_max(root: str = "/") -> int:
    try:
        with open(os.path.join(root, "etc/login.defs"), encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) == 2 and fields[0] == "SYS_UID_MAX" and fields[1].isdigit():
                    return int(fields[1])
    except OSError:
        pass
    return 999


def remove_ipc(uid: int, root: str = "/") -> str | None:
    """Where RemoveIPC=yes comes from when it applies to this user (`path:line`, or systemd's default); None when
    it does not: set to no, a system user, or no systemd-logind on this machine."""
    if uid <= sys_uid_max(root) or not os.path.isdir(os.path.join(root, "run/systemd/system")):
        return None
    effective: tuple[bool, str] = (True, "systemd's default")
    for path in _files(root):
        effective = _setting(path) or effective
    return effective[1] if effective[0] else None
