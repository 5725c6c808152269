"""RemoveIPC as systemd-logind reads it: the main file, drop-ins in name order (/etc over /run over /usr/lib)."""

from __future__ import annotations

import pytest

from shmdoctor.probe import logind


@pytest.fixture
def root(tmp_path):
    (tmp_path / "run" / "systemd" / "system").mkdir(parents=True)  # a machine booted with systemd
    (tmp_path / "etc" / "systemd").mkdir(parents=True)
    return tmp_path


def write(root, path: str, text: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


def test_systemds_default_applies_to_a_non_system_user(root):
    write(root, "etc/systemd/logind.conf", "[Login]\n#RemoveIPC=yes\n")  # Debian's file: all commented out
    assert logind.remove_ipc(1000, str(root)) == "systemd's default"
    assert logind.remove_ipc(0, str(root)) is None  # root and system users are exempt
    assert logind.remove_ipc(999, str(root)) is None


def test_the_last_setting_wins_and_says_where(root):
    write(root, "etc/systemd/logind.conf", "[Login]\nRemoveIPC=no\n")
    assert logind.remove_ipc(1000, str(root)) is None
    write(root, "usr/lib/systemd/logind.conf.d/10-vendor.conf", "[Login]\nRemoveIPC=yes\n")
    assert logind.remove_ipc(1000, str(root)) == f"{root}/usr/lib/systemd/logind.conf.d/10-vendor.conf:2"
    write(root, "etc/systemd/logind.conf.d/10-vendor.conf", "[Login]\nRemoveIPC=false\n")  # /etc replaces it
    assert logind.remove_ipc(1000, str(root)) is None
    write(root, "etc/systemd/logind.conf.d/20-site.conf", "[Other]\nRemoveIPC=yes\n")  # not [Login]: ignored
    assert logind.remove_ipc(1000, str(root)) is None


def test_no_systemd_no_finding(tmp_path):
    assert logind.remove_ipc(1000, str(tmp_path)) is None


def test_sys_uid_max_from_login_defs(root):
    write(root, "etc/login.defs", "UID_MIN 1000\nSYS_UID_MAX 499\n")
    assert logind.remove_ipc(500, str(root)) == "systemd's default"
