"""``kernelrules tune`` finds its GPU's architecture without importing torch (the CUDA driver library)."""

from __future__ import annotations

import sys

import pytest

from kernelrules.errors import KernelrulesError
from kernelrules.tune import target


class FakeDriver:
    """Stands in for libcuda: the five driver-API calls ``cuda_device`` makes, with their C conventions
    (0 is CUDA_SUCCESS; results are written through the pointers passed in)."""

    def __init__(self, name: bytes = b"NVIDIA H200", capability: tuple[int, int] = (9, 0), devices: int = 1,
                 init_error: int = 0) -> None:
        self.name, self.capability, self.devices, self.init_error = name, capability, devices, init_error
        self.calls: list[str] = []

    def cuInit(self, flags):  # noqa: N802 - the driver API's names
        self.calls.append("cuInit")
        return self.init_error

    def cuDeviceGet(self, ref, ordinal):  # noqa: N802
        self.calls.append("cuDeviceGet")
        if ordinal >= self.devices:
            return 101  # CUDA_ERROR_INVALID_DEVICE
        ref._obj.value = 1000 + ordinal
        return 0

    def cuDeviceGetName(self, buffer, length, device):  # noqa: N802
        self.calls.append("cuDeviceGetName")
        assert device.value >= 1000 and length == len(buffer)
        buffer.value = self.name[: length - 1]
        return 0

    def cuDeviceGetAttribute(self, ref, attribute, device):  # noqa: N802
        self.calls.append(f"attribute {attribute}")
        major = attribute == target.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
        ref._obj.value = self.capability[0] if major else self.capability[1]
        return 0


def test_cuda_device_reads_name_and_capability_from_the_driver():
    driver = FakeDriver(b"NVIDIA GeForce RTX 4090", (8, 9))
    assert target.cuda_device(library=driver) == ("NVIDIA GeForce RTX 4090", (8, 9))
    assert driver.calls[0] == "cuInit"


@pytest.mark.parametrize("driver", [FakeDriver(init_error=100),  # CUDA_ERROR_NO_DEVICE
                                    FakeDriver(devices=0)], ids=["no-device", "no-such-ordinal"])
def test_cuda_device_is_none_when_the_driver_reports_an_error(driver):
    assert target.cuda_device(library=driver) is None
    assert "cuDeviceGetName" not in driver.calls  # the first error stops the calls after it


def test_cuda_device_is_none_for_a_library_that_is_not_the_driver():
    assert target.cuda_device(library=object()) is None


def test_arch_name_takes_the_sku_from_the_driver_without_importing_torch(monkeypatch):
    monkeypatch.delenv("KERNELRULES_ARCH", raising=False)
    monkeypatch.setattr(target, "_cuda_library", lambda: FakeDriver(b"NVIDIA H200", (9, 0)))
    monkeypatch.setitem(sys.modules, "torch", None)  # an import of torch would now fail
    assert target.arch_name(None, False) == "h200"


def test_arch_name_falls_back_to_torch_then_says_what_to_pass(monkeypatch):
    monkeypatch.delenv("KERNELRULES_ARCH", raising=False)
    monkeypatch.setattr(target, "_cuda_library", lambda: None)
    monkeypatch.setattr(target, "_torch_device", lambda: ("NVIDIA L4", (8, 9)))
    assert target.arch_name(None, False) == "l4"
    monkeypatch.setattr(target, "_torch_device", lambda: None)
    with pytest.raises(KernelrulesError, match="no GPU found") as caught:
        target.arch_name(None, False)
    assert "--arch" in str(caught.value.hint)


def test_an_unknown_family_is_returned_as_is(monkeypatch):
    monkeypatch.delenv("KERNELRULES_ARCH", raising=False)
    monkeypatch.setattr(target, "_cuda_library", lambda: FakeDriver(b"Some Future GPU", (13, 7)))
    assert target.arch_name(None, False) == "sm_137"
