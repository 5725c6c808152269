"""The catalogue of bad inputs, across every command: each is one row, with its exit code and its one-line message.

Run as a user runs them, each in a process of its own (tests.helpers.forked_cli): exactly one line on stderr, no
traceback, nothing half-done, and within a time and a memory bound (TIME_BOUND seconds, MEMORY_BOUND of address
space: RLIMIT_AS), so that a hang or a runaway allocation is a failure of its row, not of the machine.
The rows only an engine can refuse are in tests/integration/docker/test_bad_inputs.py.
{d} in an argument is a directory holding the bad files below; commands run from it (--dataset imports from it).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import socket
import socketserver
import subprocess
import sys
import threading
import time

import pytest

from tests.helpers import REPO, assert_one_line_error, forked_cli


def _alias_bomb(head: str, tail: str) -> str:
    """~600 bytes that name 9^10 values through nine levels of aliases (the billion laughs)."""
    lines = [head, "x0: &a0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n" + tail


def _merge_bomb() -> str:
    """Merge keys doubling a mapping forty times: 2^40 keys from 1 KiB."""
    lines = ["x-m0: &m0 {k0: 1}"] + [f"x-m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: 1}}" for i in range(1, 40)]
    return "\n".join(lines) + "\nservices:\n  a:\n    image: x\n    labels: *m39\n"


POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n"
JSON_POD = '{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "p"}},\n"spec": {{"containers": [{}]}}}}'
ECS = '{"family": "t", "containerDefinitions": [{"name": "c", "linuxParameters": {"sharedMemorySize": SIZE}}]}'
# Hostile files: bombs, depth, chains, numbers and types that are not what they claim.
HOSTILE = {
    "k8s-alias-bomb.yaml": _alias_bomb("apiVersion: v1\nkind: Pod\nmetadata: {name: p}", POD[38:] + "  x: *a9\n"),
    "compose-alias-bomb.yml": _alias_bomb("", "services:\n  a:\n    image: x\n    environment: *a9\n"),
    "merge-bomb.yml": _merge_bomb(),
    "recursive-alias.yml": "services:\n  a: &a\n    image: x\n    self: *a\n",
    "deep-flow.yml": "services:\n  a:\n    x: " + "[" * 350 + "]" * 350 + "\n",
    "deep-block.yml": "services:\n  a:\n    x:\n" + "".join("  " * (i + 3) + f"k{i}:\n" for i in range(350)) + "",
    "deeper-flow.yml": "services:\n  a:\n    x: " + "[" * 100_000 + "]" * 100_000 + "\n",  # once a segfault
    "deep.json": '{"apiVersion": "v1", "kind": "Pod", "x": ' + "[" * 1000 + "]" * 1000 + "}",
    "nested-defaults.yml": "services:\n  a:\n    shm_size: " + "${A:-" * 3000 + "1g" + "}" * 3000 + "\n    image: x\n",
    "ipc-chain.yml": "services:\n"
    + "".join(f"  s{i}:\n    image: x\n    ipc: service:s{i + 1}\n" for i in range(1200))
    + "  s1200:\n    image: x\n    shm_size: 1g\n",
    "400-digits.yml": "services:\n  a:\n    shm_size: " + "9" * 400 + "\n    image: x\n",
    "400-digits-quoted.yml": "services:\n  a:\n    shm_size: '" + "9" * 400 + "m'\n    image: x\n",
    "400-digits.json": JSON_POD.format('{"name": "c", "resources": {"limits": {"memory": ' + "9" * 400 + "}}}"),
    "nan.json": JSON_POD.format('{"name": "c", "resources": {"limits": {"memory": NaN}}}'),
    "infinity.json": JSON_POD.format('{"name": "c", "resources": {"limits": {"memory": -Infinity}}}'),
    "1e400.json": JSON_POD.format('{"name": "c", "resources": {"limits": {"memory": 1e400}}}'),
    "surrogate.json": JSON_POD.format('{"name": "c\\ud800"}'),
    "shm-size-true.yml": "services:\n  a:\n    shm_size: true\n    image: x\n",
    "size-limit-negative.yaml": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
        "  volumes: [{name: d, emptyDir: {medium: Memory, sizeLimit: -1}}]\n"
        "  containers: [{name: c, volumeMounts: [{name: d, mountPath: /dev/shm}]}]\n"
    ),
    "host-ipc-false-string.yaml": POD.replace("spec:\n", 'spec:\n  hostIPC: "false"\n'),
    "empty.yml": "",
    "only-comments.yml": "# nothing here\n---\n",
    "no-containers.yaml": POD.replace("[{name: c, image: x}]", "[]"),
    "no-services.yml": "services: {}\n",
    "ecs-superscript.json": ECS.replace("SIZE", '"²"'),
    "ecs-huge.json": ECS.replace("SIZE", '"' + "9" * 29 + '"'),
    # ECS and Batch fields of the wrong type (each raised a TypeError or an AttributeError), and a million containers
    "ecs-tmpfs-number.json": ECS.replace('"sharedMemorySize": SIZE', '"tmpfs": 5'),
    "ecs-mount-options-number.json": ECS.replace(
        '"sharedMemorySize": SIZE', '"tmpfs": [{"containerPath": "/dev/shm", "mountOptions": 5}]'
    ),
    "ecs-requirements-number.json": ECS.replace("SIZE", "1").replace(
        '"linuxParameters"', '"resourceRequirements": 5, "x"'
    ),
    "ecs-compatibilities-number.json": ECS.replace("SIZE", "1").replace('"t",', '"t", "requiresCompatibilities": 5,'),
    "batch-capabilities-number.json": '{"jobDefinitionName": "j", "platformCapabilities": 5, "containerProperties": {}}',  # noqa: E501
    "batch-node-properties-list.json": '{"jobDefinitionName": "j", "nodeProperties": [], "containerProperties": {}}',
    "batch-node-ranges-number.json": '{"jobDefinitionName": "j", "nodeProperties": {"nodeRangeProperties": 5}}',
    "ecs-million-containers.json": '{"family": "t", "containerDefinitions": [' + ",".join(["{}"] * 1_000_000) + "]}",
    "empty-list.json": '{"apiVersion": "v1", "kind": "List", "items": []}',
    "long-service-name.yml": "services:\n  " + "a" * 1100 + ":\n    image: x\n",  # past YAML's 1,024 for a key
    "Jenkinsfile.unclosed": "pipeline {\n  agent { docker { image 'x' } }\n  stages { stage('t') { steps { sh '''\n"
    "docker run --shm-size 8g x\n  } } }\n}\n",
    "shm-size-gi.sh": "#!/bin/sh\ndocker run --shm-size 2Gi x\n",  # Kubernetes' suffix: docker's RAMInBytes refuses it
}
FILES = {
    **HOSTILE,
    "badsyntax.py": "def broken(:\n",
    "notoml.toml": "[tool.shmdoctor\nbatch-size = 1\n",  # --config's: a config file named by the command line
    "unknown-key.toml": "batch-sise = 64\n",
    "cfg/.shmdoctor.toml": 'batch-size = "64"\n',  # the config above cfg/compose.yml, found by lint
    "cfg/compose.yml": "services:\n  t:\n    image: pytorch/pytorch\n",
    "notds.py": "x = 1\n",
    "raises.py": "raise RuntimeError('no GPU here')\n",
    "bad.yml": "services: [\n",
    "empty.json": "{}\n",
    "notjson.json": "{'services': 1}\n",
    "badsize.yml": "services:\n  a:\n    shm_size: lots\n    image: x\n",
    "badquantity.yaml": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - {name: a, image: x, resources: {limits: {memory: 2Zi}}}\n"
    ),
    "badlabel.yml": (
        "services:\n  a:\n    image: x\n    labels: {shmdoctor.loader: 'batch_size=ten'}\n"
        "  b: {image: x, shm_size: 2g}\n"
    ),
    "billion-workers.yml": (
        "services:\n  a:\n    image: x\n"
        "    labels: {shmdoctor.loader: 'batch_size=1,num_workers=1000000000,sample_bytes=1k'}\n"
        "  b: {image: x, shm_size: 2g}\n"
    ),
    "huge-label-size.yaml": (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
        f"    shmdoctor.loader: batch_size=1,num_workers=1,sample_bytes={'9' * 400}\n"
        "spec:\n  containers: [{name: a, image: x}]\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  containers: [{name: a, image: x}]\n"
    ),
    "notes.txt": "not a segment\n",
    "volumes-not-a-list.yaml": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  volumes: 3\n  containers: [{name: a, image: x}]\n"
    ),
    "tmpfs-not-a-path.yml": "services:\n  a:\n    image: x\n    tmpfs: true\n",
    "ecs-bad-shm.json": '{"family": "t", "containerDefinitions": [{"name": "c", "linuxParameters": '
    '{"sharedMemorySize": "lots"}}]}\n',
    "bad-unit.container": "[Container]\nImage=x\nShmSize=lots\n",
    "read-only-mount.container": "[Container]\nImage=x\nMount=type=tmpfs,dst=/dev/shm,read-only=true\n",
    "fullwidth-size.container": "[Container]\nImage=x\nShmSize=２g\n",
    "mount-size-junk.container": "[Container]\nImage=x\nMount=type=tmpfs,destination=/dev/shm,tmpfs-size=lots\n",
    "no-section.container": "[Unit]\nDescription=x\n",
    "azureml-bad.yml": "$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\n"
    "command: python train.py\nenvironment: e\nresources:\n  shm_size: plenty\n",
    "env-compose/docker-compose.yml": "services:\n  a:\n    image: x\n    shm_size: ${SHM}\n",
    "env-compose/.env": "SHM=2g\nAPI_TOKEN hunter2\n",
    # Logs built against the catalogue: NCCL's pattern was quadratic on this line (5 s each), numbers raised.
    "nccl-64k.log": ("failed to extend " + "nccl" * 16_000 + "\n") * 4,
    "numbers.log": "".join(
        f"Insufficient space in /dev/shm for buf: {n} MiB required, 1.0 MiB free\n"
        for n in ("1.2.3", "1..5", "9" * 400, "9" * 5000, "１２")
    )
    + f"NCCL WARN Error: failed to extend /dev/shm/nccl-Ab12Cd to {10**30} bytes, error: No space left on device\n",
}
USAGE, PROBE = 2, 3
TIME_BOUND = 60  # seconds, a row: the slowest rows (an engine's deadline, a YAML at its size limit) take ~10
MEMORY_BOUND = 2 * 2**30  # bytes of address space, a row: shmdoctor's threads each reserve a stack and an arena
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}
LOADER = ["--batch-size", "8", "--num-workers", "2", "--sample-bytes", "1m"]

# (id, argv, environment, exit code, the message: a fragment of its one line)
CASES = [
    # flags and values, any command
    ("unknown command", ["frobnicate"], {}, USAGE, "No such command 'frobnicate'"),
    ("unknown flag", ["check", "--frobnicate"], {}, USAGE, "No such option '--frobnicate'"),
    ("integer flag given text", ["check", "--batch-size", "abc"], {}, USAGE, "'abc' is not a valid integer"),
    ("unknown format", ["check", "--format", "xml"], {}, USAGE, "'xml' is not one of 'text', 'json'"),
    ("unknown threshold", ["check", "--fail-on", "fatal"], {}, USAGE, "'fatal' is not one of 'error', 'warning'"),
    ("a flag given a value", ["check", "--pin-memory=yes"], {}, USAGE, "'--pin-memory' does not take a value"),
    # the config file (docs/config.md)
    ("a config that is not TOML", ["check", "--config", "{d}/notoml.toml"], {}, USAGE, "notoml.toml: not TOML"),
    ("a config key it does not take", ["audit", "--config", "{d}/unknown-key.toml"], {}, USAGE, "not a key it takes"),
    ("a config's value of a wrong type", ["lint", "{d}/cfg/compose.yml"], {}, USAGE, "expected an integer, got '64'"),
    ("--config naming no file", ["exporter", "--config", "{d}/none.toml"], {}, USAGE, "cannot read the config"),
    # the loader
    (
        "batch size zero",
        ["check", "--batch-size", "0", "--sample-bytes", "1m"],
        {},
        USAGE,
        "batch_size must be an integer of at least 1, got 0",
    ),
    (
        "negative workers",
        ["check", "--batch-size", "8", "--num-workers", "-1", "--sample-bytes", "1m"],
        {},
        USAGE,
        "num_workers must be an integer of at least 0, got -1",
    ),
    ("zero ranks", ["check", "--ranks", "0", *LOADER], {}, USAGE, "ranks must be an integer of at least 1, got 0"),
    (
        "prefetch without workers",
        ["check", "--batch-size", "8", "--prefetch-factor", "2", "--sample-bytes", "1m"],
        {},
        USAGE,
        "prefetch_factor needs num_workers > 0",
    ),
    (
        "prefetch zero",
        ["check", *LOADER, "--prefetch-factor", "0"],
        {},
        USAGE,
        "prefetch_factor must be an integer of at least 1",
    ),
    (
        "loader without batch size",
        ["check", "--num-workers", "2", "--sample-bytes", "1m"],
        {},
        USAGE,
        "a loader needs --batch-size",
    ),
    (
        "loader without a sample size",
        ["check", "--batch-size", "8", "--num-workers", "2"],
        {},
        USAGE,
        "a loader needs a sample size",
    ),
    # numbers past what any machine has: one line, never a search that counts down from them
    (
        "a billion workers",
        ["check", "--batch-size", "1", "--num-workers", "1000000000", "--sample-bytes", "1k"],
        {},
        USAGE,
        "num_workers must be at most 4096 (more than any machine runs), got 1000000000",
    ),
    (
        "a billion batches ahead",
        ["check", *LOADER, "--prefetch-factor", "1000000000"],
        {},
        USAGE,
        "prefetch_factor must be at most 4096",
    ),
    ("a 20-digit rank count", ["check", *LOADER, "--ranks", "9" * 20], {}, USAGE, "ranks must be at most 4096"),
    (
        "a 13-digit batch",
        ["check", "--batch-size", "9" * 13, "--sample-bytes", "1"],
        {},
        USAGE,
        "batch_size must be at most 4294967296",
    ),
    (
        "a 400-digit sample size",
        ["check", *LOADER[:4], "--sample-bytes", "1" + "0" * 400],
        {},
        USAGE,
        "(401 characters) is more than 1 PiB, more memory than any machine has",
    ),
    (
        "a batch larger than any machine",
        ["check", "--batch-size", "4000000", "--num-workers", "1", "--sample-bytes", "1t"],
        {},
        USAGE,
        "one batch of 4000000 samples is",
    ),
    # sizes
    (
        "size with a unit nobody uses",
        ["check", "--batch-size", "8", "--sample-bytes", "12xb"],
        {},
        USAGE,
        "sample_bytes: cannot read '12xb' as a size",
    ),
    (
        "size zero",
        ["check", "--batch-size", "8", "--sample-bytes", "0"],
        {},
        USAGE,
        "sample_bytes: must be greater than zero",
    ),
    (
        "negative size",
        ["check", "--batch-size", "8", "--sample-bytes", "-5k"],
        {},
        USAGE,
        "sample_bytes: cannot read '-5k' as a size",
    ),
    # dataset specs
    (
        "dataset without a colon",
        ["check", "--batch-size", "8", "--dataset", "nocolon"],
        {},
        USAGE,
        "expected MODULE:ATTR",
    ),
    (
        "dataset module missing",
        ["check", "--batch-size", "8", "--dataset", "no.such.module:x"],
        {},
        USAGE,
        "cannot import no.such.module: ModuleNotFoundError",
    ),
    (
        "dataset module with a syntax error",
        ["check", "--batch-size", "8", "--dataset", "badsyntax:x"],
        {},
        USAGE,
        "cannot import badsyntax: SyntaxError",
    ),
    (
        "dataset module raising on import",
        ["check", "--batch-size", "8", "--dataset", "raises:x"],
        {},
        USAGE,
        "cannot import raises: RuntimeError: no GPU here",
    ),
    (
        "dataset attribute missing",
        ["check", "--batch-size", "8", "--dataset", "notds:missing"],
        {},
        USAGE,
        "notds has no attribute 'missing'",
    ),
    (
        "dataset is not a dataset",
        ["check", "--batch-size", "8", "--dataset", "notds:x"],
        {},
        USAGE,
        "int is not a dataset",
    ),
    (
        "dataset and sample size both",
        ["check", "--batch-size", "8", "--dataset", "notds:x", "--sample-bytes", "1m"],
        {},
        USAGE,
        "give --sample-bytes or --dataset, not both",
    ),
    # clean
    ("clean a path that is not there", ["clean", "--path", "{d}/nowhere"], {}, USAGE, "is not a directory"),
    ("clean a file", ["clean", "--path", "{d}/notes.txt"], {}, USAGE, "is not a directory"),
    (
        "clean a directory that is not a tmpfs",
        ["clean", "--yes", "--path", "{d}"],
        {},
        USAGE,
        "is not the mount point of a tmpfs: nothing was removed",
    ),
    (
        "clean a name it does not know",
        ["clean", "--yes", "notes.txt"],
        {},
        USAGE,
        "'notes.txt' is not a segment shmdoctor knows",
    ),
    (
        "clean a file of a project",
        ["clean", "--yes", "torch_utils.py"],
        {},
        USAGE,
        "'torch_utils.py' is not a segment shmdoctor knows",
    ),
    (
        "clean a path instead of a name",
        ["clean", "--yes", "../torch_1_2_3"],
        {},
        USAGE,
        "give segment names as listed in the directory, not paths",
    ),
    ("clean --yes given a value", ["clean", "--yes=no"], {}, USAGE, "'--yes' does not take a value"),
    ("clean in an unknown format", ["clean", "--format", "yaml"], {}, USAGE, "'yaml' is not one of 'text', 'json'"),
    ("exporter with nowhere to put metrics", ["exporter"], {}, USAGE, "give --listen ADDR:PORT to serve /metrics"),
    ("exporter --listen without a port", ["exporter", "--listen", "127.0.0.1"], {}, USAGE, "expected ADDR:PORT"),
    ("exporter --listen port out of range", ["exporter", "--listen", ":99999"], {}, USAGE, "expected ADDR:PORT"),
    ("exporter --listen a host name", ["exporter", "--listen", "gpu-3:9787"], {}, USAGE, "is not an IP address"),
    ("exporter --listen port '²'", ["exporter", "--listen", "127.0.0.1:²"], {}, USAGE, "expected ADDR:PORT"),
    ("exporter --listen port '９７８７'", ["exporter", "--listen", ":９７８７"], {}, USAGE, "expected ADDR:PORT"),
    ("exporter --textfile not a directory", ["exporter", "--textfile", "{d}/notes.txt"], {}, USAGE, "is not a dir"),
    ("exporter both outputs", ["exporter", "--listen", ":9787", "--textfile", "{d}"], {}, USAGE, "or --textfile DIR"),
    # watch
    (
        "watch every 0 s",
        ["watch", "--interval", "0"],
        {},
        USAGE,
        "--interval must be a number of seconds at least 0.01",
    ),
    ("watch every -1 s", ["watch", "--interval", "-1"], {}, USAGE, "--interval must be a number of seconds"),
    ("watch every nan s", ["watch", "--interval", "nan"], {}, USAGE, "--interval must be a number of seconds"),
    ("watch every abc s", ["watch", "--interval", "abc"], {}, USAGE, "'abc' is not a valid float"),
    ("watch for -5 s", ["watch", "--duration", "-5"], {}, USAGE, "--duration must be a number of seconds"),
    ("watch forever, spelled inf", ["watch", "--duration", "inf"], {}, USAGE, "--duration must be a number of seconds"),
    ("watch holders every -1 s", ["watch", "--holders-every", "-1"], {}, USAGE, "--holders-every must be 0 (never)"),
    ("watch a path that is not there", ["watch", "--path", "{d}/nowhere"], {}, USAGE, "is not a directory"),
    ("watch with half a loader", ["watch", "--batch-size", "8"], {}, USAGE, "a loader needs a sample size"),
    # bench
    ("bench without data", ["bench", "--batch-size", "8"], {}, USAGE, "give --sample-bytes SIZE (the synthetic"),
    ("bench without a batch size", ["bench", "--sample-bytes", "1m"], {}, USAGE, "Missing option '--batch-size'"),
    (
        "bench workers not a list",
        ["bench", "--batch-size", "8", "--sample-bytes", "1m", "--num-workers", "0,two"],
        {},
        USAGE,
        "--num-workers: expected a comma list of integers",
    ),
    (
        "bench prefetch zero",
        ["bench", "--batch-size", "8", "--sample-bytes", "1m", "--prefetch-factor", "0,2"],
        {},
        USAGE,
        "--prefetch-factor: expected integers from 1 to 1024",
    ),
    (
        "bench with a billion workers",
        ["bench", "--batch-size", "8", "--sample-bytes", "1m", "--num-workers", "0,1000000000"],
        {},
        USAGE,
        "--num-workers: expected integers from 0 to 1024",
    ),
    *(
        (f"bench --budget {v}", ["bench", "--batch-size", "8", "--sample-bytes", "1m", "--budget", v], {}, USAGE, say)
        for v, say in (
            ("nan", "'nan': expected seconds above 0 up to 86400"),
            ("inf", "'inf': expected seconds above 0 up to 86400"),
            ("1e300", "'1e300': expected seconds above 0 up to 86400"),
            ("0", "'0': expected seconds above 0 up to 86400"),
        )
    ),
    (
        "bench a step of forever",
        ["bench", "--batch-size", "8", "--sample-bytes", "1m", "--step-time", "inf"],
        {},
        USAGE,
        "'inf': expected seconds from 0 up to 3600",
    ),
    (
        "bench a sample that never loads",
        ["bench", "--batch-size", "8", "--sample-bytes", "1m", "--item-latency", "nan"],
        {},
        USAGE,
        "'nan': expected seconds from 0 up to 60",
    ),
    (
        "bench pin_memory neither true nor false",
        ["bench", "--batch-size", "8", "--sample-bytes", "1m", "--pin-memory", "maybe"],
        {},
        USAGE,
        "--pin-memory: expected a comma list of true/false",
    ),
    (
        "bench pin_memory_device not a CUDA device",
        ["bench", "--batch-size", "8", "--sample-bytes", "1m", "--pin-memory-device", "none,tpu"],
        {},
        USAGE,
        "--pin-memory-device: expected a comma list of none, cuda or cuda:N",
    ),
    (
        "bench pin_memory_device where nothing is pinned",
        ["bench", "--batch-size", "8", "--sample-bytes", "1m", "--pin-memory", "false", "--pin-memory-device", "cuda"],
        {},
        USAGE,
        "--pin-memory-device applies with pin_memory true; --pin-memory is false only",
    ),
    (
        "bench on a device nobody has",
        ["bench", "--batch-size", "8", "--sample-bytes", "1m", "--device", "tpu"],
        {},
        USAGE,
        "--device 'tpu': expected auto, cpu, cuda or cuda:N",
    ),
    # parsers: bounded in size, depth, alias expansion and chains, and never blocked
    *[
        (f"lint {what}", ["lint", f"{{d}}/{name}"], {}, USAGE, message)
        for what, name, message in [
            ("a YAML alias bomb, Kubernetes form", "k8s-alias-bomb.yaml", "values once its aliases are expanded"),
            ("a YAML alias bomb, compose form", "compose-alias-bomb.yml", "values once its aliases are expanded"),
            ("a merge-key bomb", "merge-bomb.yml", "values once its aliases are expanded (an alias bomb?)"),
            ("a recursive alias", "recursive-alias.yml", "recursive-alias.yml:4: the alias *a is inside what it"),
            ("350 levels of flow YAML", "deep-flow.yml", "deep-flow.yml:3: nested deeper than 64 levels"),
            ("350 levels of block YAML", "deep-block.yml", "nested deeper than 64 levels"),
            ("100,000 levels of flow YAML", "deeper-flow.yml", "deeper-flow.yml:3: "),
            ("1000 levels of JSON", "deep.json", "deep.json: nested deeper than 64 levels of objects and arrays"),
            ("3000 nested ${A:-...}", "nested-defaults.yml", "more than 32 levels of ${...} nested"),
            ("a 1200-long ipc: service: chain", "ipc-chain.yml", "more than 64 services in a chain of ipc"),
            ("a FIFO", "fifo.yml", "fifo.yml: cannot read: a FIFO is not a regular file"),
            ("a 50 MB compose file", "50mb.yml", "50mb.yml: more than the 32 MiB shmdoctor reads from one input"),
            (
                "a 10 MB compose file",
                "10mb.yml",
                "MiB of YAML is more than the 8 MiB shmdoctor reads (JSON is read up to 32 MiB: kubectl get",
            ),
            ("a 70 MB JSON dump", "70mb.json", "70mb.json: more than the 32 MiB shmdoctor reads from one input"),
        ]
    ],
    (
        "a path that drives the terminal",
        ["lint", "{d}/no\x1b]0;pwned\x07such\x1b[2J.yml"],
        {},
        USAGE,
        "no\\x1b]0;pwned\\x07such\\x1b[2J.yml: no such file or directory",
    ),
    ("lint 100 nested directories", ["lint", "{d}/deep-dirs"], {}, USAGE, "directories nested deeper than 64"),
    ("lint /dev/zero", ["lint", "/dev/zero"], {}, USAGE, "/dev/zero: cannot read: a device is not a regular file"),
    # numbers and types that are not what they claim: one line with the file and line
    *[
        (f"lint {what}", ["lint", f"{{d}}/{name}"], {}, USAGE, message)
        for what, name, message in [
            ("a 400-digit size", "400-digits.yml", "400-digits.yml:3: a number of 400 digits (at most 64)"),
            ("a 400-digit size, quoted", "400-digits-quoted.yml", "as a size (compose's go-units: invalid size"),
            ("a 400-digit JSON quantity", "400-digits.json", "400-digits.json: a number of 400 digits"),
            ("NaN in JSON", "nan.json", "nan.json:2: NaN is not a number"),
            ("-Infinity in JSON", "infinity.json", "infinity.json:2: -Infinity is not a number"),
            ("1e400 in JSON", "1e400.json", "inf is not a Kubernetes quantity"),
            ("a lone surrogate in a name", "surrogate.json", "surrogate.json:2: 'c\\ud800' holds a lone surrogate"),
            ("shm_size: true", "shm-size-true.yml", "shm-size-true.yml:3: service 'a': shm_size: True is not a size"),
            (
                "sizeLimit: -1",
                "size-limit-negative.yaml",
                "emptyDir.sizeLimit: a quantity of memory cannot be negative",
            ),
            ("hostIPC: 'false'", "host-ipc-false-string.yaml", "spec.hostIPC must be true or false, not str 'false'"),
            ("an empty file", "empty.yml", "empty.yml: empty"),
            ("a file of comments", "only-comments.yml", "only-comments.yml: empty"),
            ("containers: []", "no-containers.yaml", "no-containers.yaml:5: Pod/p: spec.containers is empty"),
            ("services: {}", "no-services.yml", "no-services.yml:1: services: is empty: nothing to judge"),
            ("an ECS size in superscript digits", "ecs-superscript.json", "must be a whole number of MiB, not '²'"),
            ("an ECS size of 29 digits", "ecs-huge.json", "MiB is more memory than any machine has"),
            ("an empty List", "empty-list.json", "empty-list.json: no service, workload or object in it"),
            ("a key of 1,100 characters", "long-service-name.yml", "yml:2: a key of 1,100 characters: YAML reads"),
            ("an unclosed ''' string", "Jenkinsfile.unclosed", "unclosed:3: a ''' string is not closed: Groovy"),
            ("--shm-size 2Gi", "shm-size-gi.sh", "sh:2: --shm-size: cannot read '2Gi' as a size (the engine's"),
        ]
    ],
    # audit: the engine and container names
    (
        "engine refuses",
        ["audit"],
        {"DOCKER_HOST": "tcp://127.0.0.1:1"},
        PROBE,
        "cannot reach the Docker engine at tcp://127.0.0.1:1: connection refused",
    ),
    ("engine socket missing", ["audit"], NO_ENGINE, PROBE, "cannot reach the Docker engine at unix:///nonexistent"),
    (
        "DOCKER_HOST with an unknown scheme",
        ["audit"],
        {"DOCKER_HOST": "bogus://x"},
        USAGE,
        "DOCKER_HOST='bogus://x' is not an engine address",
    ),
    (
        "DOCKER_HOST not an address",
        ["audit"],
        {"DOCKER_HOST": "garbage"},
        USAGE,
        "DOCKER_HOST='garbage' is not an engine address",
    ),
    (
        "audit filter without =",
        ["audit", "--filter", "label"],
        NO_ENGINE,
        USAGE,
        "--filter 'label': expected KEY=VALUE",
    ),
    # lint: files
    ("lint a file that is not there", ["lint", "{d}/nowhere.yml"], {}, USAGE, "nowhere.yml: no such file or directory"),
    ("lint without a file", ["lint"], {}, USAGE, "lint needs a FILE, a DIR"),
    ("lint broken YAML", ["lint", "{d}/bad.yml"], {}, USAGE, "bad.yml:2: not YAML"),
    ("lint broken JSON", ["lint", "{d}/notjson.json"], {}, USAGE, "notjson.json:1: not JSON"),
    (
        "lint a file that is neither compose nor Kubernetes",
        ["lint", "{d}/empty.json"],
        {},
        USAGE,
        "not a compose file (services:), a Kubernetes manifest",
    ),
    (
        "lint a directory without manifests",
        ["lint", "{d}/empty-dir"],
        {},
        USAGE,
        "no *.yml, *.yaml, *.json, *.container file or script",
    ),
    (
        "lint a compose size nobody can read",
        ["lint", "{d}/badsize.yml"],
        {},
        USAGE,
        "badsize.yml:3: service 'a': shm_size: cannot read 'lots' as a size",
    ),
    (
        "lint a Kubernetes quantity nobody can read",
        ["lint", "{d}/badquantity.yaml"],
        {},
        USAGE,
        "resources.limits.memory: cannot read '2Zi' as a Kubernetes quantity",
    ),
    (
        "lint a pod whose volumes are not a list",
        ["lint", "{d}/volumes-not-a-list.yaml"],
        {},
        USAGE,
        "volumes-not-a-list.yaml:5: spec.volumes must be a list, not int",
    ),
    (
        "lint a service whose tmpfs is not a path",
        ["lint", "{d}/tmpfs-not-a-path.yml"],
        {},
        USAGE,
        "service 'a': tmpfs must be a path or a list of paths, not bool",
    ),
    (
        "lint an ECS size nobody can read",
        ["lint", "{d}/ecs-bad-shm.json"],
        {},
        USAGE,
        "ecs-bad-shm.json: t: linuxParameters.sharedMemorySize must be a whole number of MiB, not 'lots'",
    ),
    (
        "lint a Quadlet size nobody can read",
        ["lint", "{d}/bad-unit.container"],
        {},
        USAGE,
        "bad-unit.container:3: ShmSize: cannot read 'lots'",
    ),
    *[
        (f"lint {name}", ["lint", f"{{d}}/{name}"], {}, USAGE, message)
        for name, message in [
            ("ecs-tmpfs-number.json", "linuxParameters.tmpfs must be a list, not int"),
            ("ecs-mount-options-number.json", "tmpfs mountOptions must be a list, not int"),
            ("ecs-requirements-number.json", "resourceRequirements must be a list, not int"),
            ("ecs-compatibilities-number.json", "requiresCompatibilities must be a list, not int"),
            ("batch-capabilities-number.json", "platformCapabilities must be a list, not int"),
            ("batch-node-properties-list.json", "nodeProperties must be an object, not list"),
            ("batch-node-ranges-number.json", "nodeProperties.nodeRangeProperties must be a list, not int"),
            ("ecs-million-containers.json", "more than 1000 containers in one file"),
            ("read-only-mount.container", "read-only-mount.container:3: Mount=type=tmpfs,dst=/dev/shm,read-only=true"),
            ("fullwidth-size.container", "fullwidth-size.container:3: ShmSize: cannot read '２g' as a size (the"),
            ("mount-size-junk.container", "tmpfs-size: cannot read 'lots'"),
        ]
    ],
    (
        "lint a .container without [Container]",
        ["lint", "{d}/no-section.container"],
        {},
        USAGE,
        "no-section.container: no [Container] section: not a Quadlet .container unit",
    ),
    (
        "lint an Azure ML shm_size nobody can read",
        ["lint", "{d}/azureml-bad.yml"],
        {},
        USAGE,
        "azureml-bad.yml:5: job: resources.shm_size: cannot read 'plenty'",
    ),
    (
        "lint a compose file whose .env has a bad line",
        ["lint", "{d}/env-compose/docker-compose.yml"],
        {},
        USAGE,
        "env-compose/.env:2: not a KEY=VALUE line",
    ),
    (
        "lint with an --env-file that is not there",
        ["lint", "{d}/env-compose", "--env-file", "{d}/nowhere.env"],
        {},
        USAGE,
        "nowhere.env: cannot read: No such file or directory",
    ),
    # explain
    ("explain: a log that does not exist", ["explain", "{d}/no-such.log"], {}, USAGE, "No such file or directory"),
    ("explain: a directory as the log", ["explain", "{d}"], {}, USAGE, "a directory is not a regular file"),
    ("explain: /dev/zero", ["explain", "/dev/zero"], {}, USAGE, "/dev/zero: cannot read: a device is not a regular"),
    ("explain: a FIFO", ["explain", "{d}/fifo.yml"], {}, USAGE, "fifo.yml: cannot read: a FIFO is not a regular"),
    ("explain: /proc/self/mem (EIO)", ["explain", "/proc/self/mem"], {}, USAGE, "mem: cannot read: Input/output error"),
    ("explain: /proc/self/clear_refs", ["explain", "/proc/self/clear_refs"], {}, USAGE, "read: Invalid argument"),
    ("explain: a log and a container", ["explain", "x.log", "--container", "c"], {}, USAGE, "not both"),
    ("explain: --tail zero", ["explain", "--container", "c", "--tail", "0"], {}, USAGE, "--tail"),
    ("explain: --container ''", ["explain", "--container", ""], {}, USAGE, "--container: give a container's name"),
    ("explain: --timeout 1e10", ["explain", "--container", "c", "--timeout", "1e10"], {}, USAGE, "--timeout must be"),
    (
        "explain: a container with no engine",
        ["explain", "--container", "c"],
        {"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
        3,
        "cannot reach the Docker engine",
    ),
    # run
    ("run: no command", ["run"], {}, USAGE, "Missing argument"),
    ("run: --interval zero", ["run", "--interval", "0", "--", "true"], {}, USAGE, "--interval must be"),
    ("run: every 1e10 s", ["run", "--interval", "1e10", "--", "true"], {}, USAGE, "at most 3600, got 10000000000.0"),
    ("watch every 1e10 s", ["watch", "--interval", "1e10"], {}, USAGE, "at most 3600, got 10000000000.0"),
    ("run: every 1e-9 s (a busy loop)", ["run", "--interval", "1e-9", "--", "true"], {}, USAGE, "at least 0.01"),
    (
        "watch every 1e-9 s (a busy loop)",
        ["watch", "--interval", "1e-9"],
        {},
        USAGE,
        "at least 0.01 and at most 3600, got 1e-09",
    ),
    ("run: --report a FIFO", ["run", "--report", "{d}/fifo.yml", "--", "true"], {}, USAGE, "not a regular file"),
    ("run: --holders-every negative", ["run", "--holders-every", "-1", "--", "true"], {}, USAGE, "--holders-every"),
    (
        "run: --report into a missing directory",
        ["run", "--report", "{d}/no/r.json", "--", "true"],
        {},
        USAGE,
        "--report",
    ),
    ("run: a command that does not exist", ["run", "--", "no-such-command-sdt"], {}, 127, "cannot run"),
]
# A target's own bad loader label or annotation is that target's `bad-label` finding: the others are judged, the
# run goes on (exit 1: the finding is an error). (id, argv, the target with the finding, a fragment of its message)
LABEL_CASES = [
    ("a label that is not a loader", ["lint", "{d}/badlabel.yml"], "badlabel.yml:a", "batch_size must be an integer"),
    (
        "a label with a billion workers",
        ["lint", "{d}/billion-workers.yml"],
        "billion-workers.yml:a",
        "num_workers must be at most 4096",
    ),
    (
        "an annotation with a 400-digit size",
        ["lint", "{d}/huge-label-size.yaml"],
        "huge-label-size.yaml:Pod/p",
        "is more than 1 PiB",
    ),
]
# Engines that answer badly, served here by fake_engines (each a real HTTP server on a unix socket, or a TCP port that
# an ssh client reaches): {engine:NAME} in DOCKER_HOST is NAME's address.
ENGINE_CASES = [
    (
        "an engine that trickles a byte every 0.2 s",
        ["audit", "--timeout", "0.5"],
        {"DOCKER_HOST": "{engine:trickle}"},
        PROBE,
        "did not answer within 0.5 s (--timeout)",
    ),
    (
        "explain --container of an engine that trickles",
        ["explain", "--container", "c", "--timeout", "0.5"],
        {"DOCKER_HOST": "{engine:trickle}"},
        PROBE,
        "did not answer within 0.5 s (--timeout)",
    ),
    (
        "an ssh host that accepts and says nothing",
        ["audit", "--timeout", "0.5"],
        {"DOCKER_HOST": "{engine:silent-ssh}"},
        PROBE,
        "did not answer within 0.5 s (--timeout)",
    ),
    (
        "an engine that lists [{}]",
        ["audit"],
        {"DOCKER_HOST": "{engine:list-of-empty}"},
        PROBE,
        "answered the list of containers with something else",
    ),
    (
        "an engine that lists {}",
        ["audit"],
        {"DOCKER_HOST": "{engine:list-is-a-mapping}"},
        PROBE,
        "answered the list of containers with something else",
    ),
    (
        "an engine that lists null",
        ["audit"],
        {"DOCKER_HOST": "{engine:list-is-null}"},
        PROBE,
        "answered the list of containers with something else",
    ),
    (
        "explain a container whose inspect is {}",
        ["explain", "--container", "b" * 64],
        {"DOCKER_HOST": "{engine:inspects-of-every-shape}"},
        PROBE,
        "answered the inspect of " + "b" * 64 + " with something else",
    ),
    (
        "an engine that lists JSON nested 100,000 deep",
        ["audit"],
        {"DOCKER_HOST": "{engine:nested}"},
        PROBE,
        "answered GET /containers/json with JSON nested deeper than",
    ),
    ("a timeout of 1e10 s", ["audit", "--timeout", "1e10"], NO_ENGINE, USAGE, "--timeout must be a number of seconds"),
    ("a timeout of nan s", ["audit", "--timeout", "nan"], NO_ENGINE, USAGE, "--timeout must be a number of seconds"),
]


def bounded_run(args: list[str], *, cwd, env: dict, stdin=None) -> subprocess.CompletedProcess:
    """shmdoctor ARGS in a process of its own held to TIME_BOUND and MEMORY_BOUND (past either, the row fails)."""
    return forked_cli(*args, cwd=cwd, env=env, stdin=stdin, timeout=TIME_BOUND, memory=MEMORY_BOUND)


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad-inputs")
    for name, text in FILES.items():
        (d / name).parent.mkdir(exist_ok=True)
        (d / name).write_text(text)
    (d / "empty-dir").mkdir()
    os.mkfifo(d / "fifo.yml")  # no writer: opening it to read would wait forever
    deep = d / "deep-dirs"
    deep.mkdir()
    for _ in range(100):  # past the bound; at ~1000 os.walk's recursion was a RecursionError
        deep /= "d"
        deep.mkdir()
    (deep / "compose.yml").write_text("services: {a: {image: x}}\n")
    service = "  s{}:\n    image: trainer\n    shm_size: 2g\n    labels: {{team: vision}}\n"
    for mb in (10, 50):  # ~64 bytes a service
        (d / f"{mb}mb.yml").write_text("services:\n" + "".join(service.format(i) for i in range(mb * 2**20 // 64)))
    (d / "70mb.json").write_text('{"kind": "List", "items": [' + ", ".join(["{}"] * (70 * 2**20 // 4)) + "]}")
    return d


class FakeEngine(http.server.BaseHTTPRequestHandler):
    """An engine's HTTP API as this test wants it to answer: `listing` for the list of containers, `inspects` by id,
    each byte 0.2 s apart with `trickle` (at most TRICKLED of them: it stops by itself), so that no read waits its
    --timeout out: only a deadline for all of them ends it."""

    protocol_version = "HTTP/1.1"
    listing: object = []
    inspects: dict = {}
    trickle = False
    log_frame = 0  # bytes of one log frame (its header claims 4 GiB), then a bus error's line
    raw_listing = b""  # the list of containers as these bytes, where json.dumps cannot write them (too deep)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.endswith("/logs"):
            self._log()
            return
        if path.endswith(("/version", "/_ping")):
            body: object = {"ApiVersion": "1.41", "Version": "20.10.24"}
        elif path.endswith("/containers/json"):
            body = self.listing
        else:  # /containers/<id>/json
            body = self.inspects.get(path.split("/")[-2])
        if isinstance(body, bytes):  # an inspect as these bytes: 1e400 as the engine wrote it
            data = body
        elif self.raw_listing and path.endswith("/containers/json"):
            data = self.raw_listing
        else:
            data = json.dumps(body).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        try:
            if not self.trickle:
                self.wfile.write(head.encode() + data)
                return
            for byte in (head.encode() + data)[:TRICKLED]:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:  # the client gave up: what a deadline is for
            self.close_connection = True

    def _log(self) -> None:
        self.wfile.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: close\r\n\r\n"
        )
        self.wfile.write(b"\x02\x00\x00\x00\xff\xff\xff\xff")
        block = b"x" * 2**20
        with contextlib.suppress(OSError):
            for _ in range(self.log_frame // len(block)):
                self.wfile.write(block)
            self.wfile.write(b"\nRuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error.\n")
        self.close_connection = True

    def log_message(self, *args):
        pass

    def address_string(self):  # a unix socket has no (host, port)
        return "engine"


TRICKLED = 120
INSPECT = {"Id": "a" * 64, "Name": "/good", "HostConfig": {"ShmSize": 2**31, "IpcMode": "private"}, "State": {}}
ENGINES = {
    "trickle": dict(trickle=True),
    "list-of-empty": dict(listing=[{}]),
    "log-frame-of-4-gib": dict(
        inspects={"a" * 64: {**INSPECT, "State": {"Status": "exited", "ExitCode": 1}}}, log_frame=1536 * 2**20
    ),
    "list-is-a-mapping": dict(listing={}),
    "list-is-null": dict(listing=None),
    "nested": dict(raw_listing=b"[" * 100_000 + b"]" * 100_000),
    "hostile-names": dict(
        listing=[{"Id": "f" * 64, "Names": ["/evil\x1b]0;pwned\x07\x1b[2J"]}],
        inspects={"f" * 64: {**INSPECT, "Id": "f" * 64, "Name": "/evil\x1b]0;pwned\x07\x1b[2J"}},
    ),
    "odd-shm-sizes": dict(
        listing=[{"Id": c * 64, "Names": [f"/{c}"]} for c in "abcdef"],
        inspects={
            c * 64: f'{{"Id": "{c * 64}", "Name": "/{c}", "HostConfig": {{"ShmSize": {size}}}}}'.encode()
            for c, size in zip("abcdef", ("NaN", "1e400", "1" + "0" * 400, "-67108864", '"64m"', "0"))
        },
    ),
    "inspects-of-every-shape": dict(
        listing=[{"Id": c * 64, "Names": [f"/{name}"]} for c, name in zip("abcde", ("good", "{}", "[{}]", "1", "bad"))],
        inspects={
            "a" * 64: INSPECT,
            "b" * 64: {},
            "c" * 64: [{}],
            "d" * 64: 1,
            "e" * 64: {  # an inspect whose every field is of the wrong type
                "Id": "e" * 64,
                "Name": 5,
                "HostConfig": {"ShmSize": "lots", "IpcMode": ["host"], "Memory": -1, "Tmpfs": [], "Mounts": {}},
                "Mounts": "none",
                "State": {"Status": 7, "OOMKilled": "yes"},
                "Config": {"Labels": ["shmdoctor.loader"]},
            },
        },
    ),
}


@pytest.fixture(scope="module")
def fake_engines(tmp_path_factory):
    """{name: DOCKER_HOST} of each engine of ENGINES (a threaded HTTP server on a unix socket), and "silent-ssh": a
    TCP port on loopback that accepts and never says a word, reached as ssh://. All stop with the module."""
    d = tmp_path_factory.mktemp("engines")
    servers, addresses = [], {}
    for name, answers in ENGINES.items():
        server = socketserver.ThreadingUnixStreamServer(str(d / f"{name}.sock"), type(name, (FakeEngine,), answers))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()  # shut down in 0.05 s, not 0.5
        servers.append(server)
        addresses[name] = f"unix://{d / name}.sock"
    silent = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    silent.settimeout(0.5)

    def hold() -> None:  # accepts and keeps each connection open, saying nothing, until the module ends
        while silent.fileno() >= 0:
            with contextlib.suppress(OSError):
                held.append(silent.accept()[0])

    threading.Thread(target=hold, daemon=True).start()
    addresses["silent-ssh"] = f"ssh://127.0.0.1:{silent.getsockname()[1]}"
    yield addresses
    for server in servers:
        server.shutdown()
        server.server_close()
    silent.close()
    for connection in held:
        connection.close()


def _engine_env(request, env: dict) -> dict:
    engines = request.getfixturevalue("fake_engines") if any("{engine:" in v for v in env.values()) else {}
    return {k: re.sub(r"\{engine:([\w-]+)\}", lambda m: engines[m.group(1)], v) for k, v in env.items()}


@pytest.mark.parametrize(
    "argv, env, code, message", [c[1:] for c in CASES + ENGINE_CASES], ids=[c[0] for c in CASES + ENGINE_CASES]
)
def test_bad_input(request, bad_files, argv, env, code, message):
    args = [a.format(d=bad_files) for a in argv]
    proc = bounded_run(args, cwd=bad_files, env=_engine_env(request, env))
    assert_one_line_error(proc, code, message)


def test_the_catalogue_covers_every_command_and_30_kinds():
    from shmdoctor.cli import COMMANDS

    covered = {argv[0] for _, argv, *_ in CASES}
    assert len({c[0] for c in CASES}) == len(CASES) >= 30
    assert set(COMMANDS) <= covered, f"no bad input for {set(COMMANDS) - covered}"


@pytest.mark.parametrize("argv, target, message", [c[1:] for c in LABEL_CASES], ids=[c[0] for c in LABEL_CASES])
def test_bad_label_is_its_targets_finding(bad_files, argv, target, message):
    proc = bounded_run([*(a.format(d=bad_files) for a in argv), "--format", "json"], cwd=bad_files, env={})
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    reports = json.loads(proc.stdout)["reports"]
    (report,) = [r for r in reports if r["target"]["name"].endswith(target)]
    (finding,) = [f for f in report["findings"] if f["id"] == "bad-label"]
    assert message in finding["message"] and report["verdict"] == "fail"
    others = [r for r in reports if r is not report]
    assert others and all(r["verdict"] != "fail" for r in others)  # judged as usual


def test_an_ssh_host_that_says_nothing_leaves_no_ssh_client_behind(fake_engines, bad_files):
    import psutil

    port = fake_engines["silent-ssh"].rpartition(":")[2]
    proc = bounded_run(["audit", "--timeout", "0.5"], cwd=bad_files, env={"DOCKER_HOST": fake_engines["silent-ssh"]})
    assert proc.returncode == PROBE, proc.stderr
    clients = [p for p in psutil.process_iter(["cmdline"]) if port in (p.info["cmdline"] or []) and "ssh" in str(p)]
    assert clients == []


def test_engine_answers_of_the_wrong_shape_are_their_containers_probe_incomplete(fake_engines, bad_files):
    env = {"DOCKER_HOST": fake_engines["inspects-of-every-shape"]}
    proc = bounded_run(["audit", *LOADER, "--format", "json"], cwd=bad_files, env=env)
    assert "Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr  # warnings: probe-incomplete
    reports = {r["target"]["name"]: r for r in json.loads(proc.stdout)["reports"]}
    assert reports["good"]["verdict"] == "ok"
    for name in ("{}", "[{}]", "1"):
        assert [f["id"] for f in reports[name]["findings"]] == ["probe-incomplete"]
        assert "not a container" in reports[name]["findings"][0]["message"]
    bad = reports["e" * 12]  # its Name is not a string: named by its id
    assert bad["shm"]["size_bytes"] is None and bad["ipc"]["mode"] == "private" and bad["memory"]["limit_bytes"] is None


def test_an_odd_shm_size_from_the_engine_is_said_as_it_was_answered(fake_engines, bad_files):
    """NaN, 1e400, 10^400, a negative number and a string were all said 'unset', as 0 (the daemon's default) is."""
    env = {"DOCKER_HOST": fake_engines["odd-shm-sizes"], "NO_COLOR": "1"}
    proc = bounded_run(["audit", "--format", "json"], cwd=bad_files, env=env)
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1), proc.stderr
    said = {r["target"]["name"]: r["shm"]["detail"] for r in json.loads(proc.stdout)["reports"]}
    odd = ", not a size: its /dev/shm is not known"
    assert said == {
        "a": "HostConfig.ShmSize = NaN" + odd,
        "b": "HostConfig.ShmSize = Infinity (1e400 or past it: more than a float holds)" + odd,
        "c": "HostConfig.ShmSize = a number of about 401 digits" + odd,
        "d": "HostConfig.ShmSize = -67108864" + odd,
        "e": 'HostConfig.ShmSize = "64m"' + odd,
        "f": "HostConfig.ShmSize unset",
    }


DIRECTORY_ON_STDIN = """
import os, sys
os.dup2(os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY), 0)  # after Python's start, which refuses a directory
from shmdoctor.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("args", [["explain"], ["explain", "-"], ["lint", "-"]], ids=" ".join)
def test_a_directory_on_stdin(tmp_path, args):
    """`shmdoctor explain < DIR`: CPython's own start refuses it before shmdoctor runs (init_sys_streams: '<stdin>
    is a directory, cannot continue', exit 1; docs/limits.md says so); where Python has started (the API, a
    descriptor replaced since), shmdoctor's read is one line, exit 2."""
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        argv = [sys.executable, "-m", "shmdoctor", *args]
        proc = subprocess.run(argv, stdin=fd, capture_output=True, text=True, timeout=60, cwd=REPO)
    finally:
        os.close(fd)
    assert proc.returncode == 1 and "<stdin> is a directory, cannot continue" in proc.stderr, proc.stderr
    argv = [sys.executable, "-c", DIRECTORY_ON_STDIN, str(tmp_path), *args]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=REPO)
    assert_one_line_error(proc, 2, "cannot read: Is a directory")


def test_a_quadlet_unit_of_200000_continued_lines_is_joined_in_linear_time(tmp_path):
    """Each `\\` line was added to the text so far (quadratic: 200,000 of them did not end)."""
    unit = tmp_path / "long.container"
    unit.write_text("[Container]\nImage=x\nPodmanArgs=" + "--label=a \\\n" * 200_000 + "--shm-size=2g\n")
    proc = bounded_run(["lint", str(unit), "--format", "json"], cwd=tmp_path, env={})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["reports"][0]["shm"]["size_bytes"] == 2 * 2**30


def test_a_log_frame_claiming_4_gib_is_read_in_bounded_pieces(fake_engines, bad_files):
    """The SDK read a frame whole, as long as its header claims: 1.5 GiB sent passed MEMORY_BOUND."""
    env = {"DOCKER_HOST": fake_engines["log-frame-of-4-gib"]}
    proc = bounded_run(["explain", "--container", "a" * 64, "--timeout", "50"], cwd=bad_files, env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "killed by signal: Bus error" in proc.stdout  # the end of the frame was read: the last 8 MiB are kept


def test_stdin_without_end_is_refused_at_the_limit(bad_files):
    with open("/dev/zero", "rb") as zero:
        proc = bounded_run(["lint", "-"], cwd=bad_files, env={}, stdin=zero)
    assert_one_line_error(proc, USAGE, "<stdin>: more than the 32 MiB shmdoctor reads from one input")


def test_audit_text_escapes_a_container_named_with_terminal_escapes(fake_engines, bad_files):
    env = {"DOCKER_HOST": fake_engines["hostile-names"], "NO_COLOR": "1"}
    proc = bounded_run(["audit", *LOADER], cwd=bad_files, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J" in proc.stdout


def test_explain_of_lines_built_against_the_catalogue_ends_in_bounds(bad_files):
    proc = bounded_run(["explain", "nccl-64k.log"], cwd=bad_files, env={})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr  # nothing matched: no size, no traceback
    proc = bounded_run(["explain", "numbers.log", "--format", "json"], cwd=bad_files, env={})
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    (d,) = json.loads(proc.stdout)["diagnoses"]
    assert d["signature"] == "nccl-shm-extend" and d["bytes_needed"] is None and d["line"] == 6
    assert "more than 1 PiB" in proc.stdout and not re.search(r"--shm-size=\d{6,}", proc.stdout)


def test_explain_of_2_gib_without_a_newline_holds_no_line_in_memory(tmp_path):
    """GNU grep holds a whole line: 2 GiB of one line took 4.2 GB, past MEMORY_BOUND its 'memory exhausted'."""
    log = tmp_path / "one-line.log"
    with open(log, "wb") as f:
        f.write(b"x" * 8192)  # text at the start (a log of NUL bytes alone is said to be binary)
        f.truncate(2 * 2**30)  # sparse: no disk, then NUL bytes to 2 GiB and no newline
    proc = bounded_run(["explain", str(log)], cwd=tmp_path, env={})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize(
    "feeder",
    [
        "while True: print('x' * 100, flush=True)",  # as fast as it can, forever: bounded in memory, and in time
        "import time\nwhile True: print('x', flush=True); time.sleep(0.2)",  # a line now and then
        "import time; time.sleep(600)",  # nothing, and no end
    ],
)
def test_explain_of_stdin_fed_without_end_ends_at_its_timeout(tmp_path, feeder):
    producer = subprocess.Popen([sys.executable, "-c", feeder], stdout=subprocess.PIPE)
    try:
        start = time.monotonic()
        proc = bounded_run(["explain", "--timeout", "0.5"], cwd=tmp_path, env={}, stdin=producer.stdout)
        waited = time.monotonic() - start
    finally:
        producer.kill()
        producer.wait()
    assert_one_line_error(proc, PROBE, "stdin: the log did not end within --timeout 0.5 s")
    assert waited >= 0.5  # it read until then


def test_an_error_quoting_a_huge_value_stays_one_bounded_line(bad_files):
    proc = bounded_run(["lint", "x" * 100_000], cwd=bad_files, env={})
    assert_one_line_error(proc, USAGE, "shmdoctor: error: xxx")
    assert len(proc.stderr.strip()) == len("shmdoctor: error: ") + 1000 and proc.stderr.strip().endswith("…")
