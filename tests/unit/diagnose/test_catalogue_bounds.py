"""The catalogue's bounds at their edges, on texts shaped as the programs print them: a segment's name up to NAME_MAX
(255), free text of up to 1000 characters between two parts of one message, a size up to exactly 1 PiB (one byte
more is said implausible, in the log's own unit), and Triton's pool one growth step (1 MiB) past the size it had."""

import pytest

from shmdoctor.diagnose import scan_text

MiB, PiB = 2**20, 2**50


def found(text: str) -> list[tuple[str, str]]:
    """The catalogue's matches (the general reader reads words apart on their own: test_reader.py)."""
    return [(d.signature, d.cause) for d in scan_text(text).diagnoses() if d.found_by == "catalogue"]


@pytest.mark.parametrize("length, fires", [(255, [("python-shm-exists", "shm-leak")]), (256, [])])
def test_a_segment_name_is_one_file_name_of_at_most_255_characters(length, fires):
    """mosaicml/streaming#689's 'File exists: '/000006_locals'', its name as long as Linux allows one (NAME_MAX)
    and one character more, which no shm_open can have made."""
    name = "000006_locals".ljust(length, "x")
    assert found(f"FileExistsError: [Errno 17] File exists: '/{name}'") == fires


@pytest.mark.parametrize("gap, fires", [(1000, [("torch-shm-enospc", "shm-space")]), (1001, [])])
def test_two_parts_of_one_message_are_at_most_1000_characters_apart(gap, fires):
    """idiap/ESLAM#20's message with free text between the file and the error: 1000 characters are one message."""
    between = ": " + "x" * (gap - 2)
    text = f"RuntimeError: unable to write to file </torch_31911_952036340_6686>{between}No space left on device (28)"
    assert found(text) == fires


NCCL_EXTEND = "node1:77:90 [1] misc/shmutils.cc:88 NCCL WARN Error: failed to extend /dev/shm/nccl-Ab12Cd to {} bytes"
VLLM = "RuntimeError: Insufficient space in /dev/shm for psm_1a2b3c4d: {} MiB required, 60.2 MiB free. Increase it"


@pytest.mark.parametrize(
    "text, needed, said",
    [
        (NCCL_EXTEND.format(1_125_899_906_842_624), PiB, ""),
        (NCCL_EXTEND.format(1_125_899_906_842_625), None, "the log says 1125899906842625 bytes, more than 1 PiB"),
        (VLLM.format("1073741824.0"), PiB, ""),  # 2^30 MiB
        (VLLM.format("1073741825.0"), None, "the log says 1073741825.0 × 1048576 bytes, more than 1 PiB"),
    ],
)
def test_a_size_up_to_exactly_1_pib_is_read_and_one_more_is_said_in_the_logs_unit(text, needed, said):
    (d,) = scan_text(text).diagnoses()
    assert d.bytes_needed == needed
    assert d.reason == (f"{said}: not a size to give /dev/shm" if said else "")


@pytest.mark.parametrize("pool_mib", [1, 3, 64])
def test_triton_needs_one_growth_step_more_than_the_pool_it_could_not_grow(pool_mib):
    """triton-inference-server/server#5681's text at the pools Triton grows through (1 MiB by default, + 1 MiB a
    step: FACTS.md): it names the size it had, so it needed at least 1 MiB more."""
    text = (
        "tritonclient.utils.InferenceServerException: Failed to increase the shared memory pool size for key "
        f"'triton_python_backend_shm_region_2' to {pool_mib * MiB} bytes. If you are running Triton inside docker, "
        "use '--shm-size' flag to control the shared memory region size. Error: No space left on device"
    )
    (d,) = scan_text(text).diagnoses()
    assert d.bytes_needed == (pool_mib + 1) * MiB
