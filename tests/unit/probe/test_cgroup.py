"""The memory cgroup, v1 and v2, on file trees shaped like the real ones (values as read in real containers)."""

from pathlib import Path

from shmdoctor.probe import cgroup

V1_UNLIMITED = "9223372036854771712"  # read in a container started without --memory (tests/data/mountinfo)


def tree(root: Path, files: dict[str, str]) -> str:
    for name, value in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    return str(root)


def test_v1_container_with_memory_limit(tmp_path):
    root = tree(tmp_path, {"memory/memory.limit_in_bytes": "734003200", "memory/memory.usage_in_bytes": "10240000"})
    assert cgroup.memory(root, "12:memory:/docker/4405051b\n") == (734003200, 10240000)


def test_v1_unlimited_is_none(tmp_path):
    root = tree(tmp_path, {"memory/memory.limit_in_bytes": V1_UNLIMITED, "memory/memory.usage_in_bytes": "5"})
    assert cgroup.memory(root, "12:memory:/\n") == (None, 5)


def test_v1_host_takes_the_tightest_limit_up_the_tree(tmp_path):
    root = tree(
        tmp_path,
        {
            "memory/memory.limit_in_bytes": V1_UNLIMITED,
            "memory/job/memory.limit_in_bytes": "2147483648",
            "memory/job/step/memory.limit_in_bytes": V1_UNLIMITED,
            "memory/job/step/memory.usage_in_bytes": "100",
        },
    )
    assert cgroup.memory(root, "4:memory:/job/step\n") == (2147483648, 100)


def test_v2(tmp_path):
    root = tree(
        tmp_path,
        {
            "cgroup.controllers": "memory",
            "memory.max": "max",
            "kubepods/pod1/memory.max": "1073741824",
            "kubepods/pod1/memory.current": "4096",
        },
    )
    assert cgroup.memory(root, "0::/kubepods/pod1\n") == (1073741824, 4096)


def test_v2_no_limit(tmp_path):
    root = tree(tmp_path, {"memory.max": "max", "memory.current": "123"})
    assert cgroup.memory(root, "0::/\n") == (None, 123)


def test_cpus_from_quota(tmp_path):
    root = tree(tmp_path, {"cpu/cpu.cfs_quota_us": "50000", "cpu/cpu.cfs_period_us": "100000"})
    assert cgroup.cpus(root) == 0.5
    root2 = tree(tmp_path / "v2", {"cpu.max": "max 100000"})
    assert cgroup.cpus(root2) >= 1


def test_inactive_page_cache_does_not_count_as_use(tmp_path):
    """After a dataset is read from disk, its page cache fills usage; the kernel reclaims it before an OOM kill."""
    v1 = tree(
        tmp_path / "v1",
        {
            "memory/memory.limit_in_bytes": "1073741824",
            "memory/memory.usage_in_bytes": "900000000",
            "memory/memory.stat": "cache 850000000\ntotal_inactive_file 800000000\n",
        },
    )
    assert cgroup.memory(v1, "12:memory:/\n") == (1073741824, 100000000)
    v2 = tree(
        tmp_path / "v2",
        {
            "memory.max": "1073741824",
            "memory.current": "900000000",
            "memory.stat": "anon 50000000\nfile 850000000\ninactive_file 800000000\n",
        },
    )
    assert cgroup.memory(v2, "0::/\n") == (1073741824, 100000000)
