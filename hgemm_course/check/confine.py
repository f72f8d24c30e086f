"""What the kernel lets an ordinary user take away from a process before it runs learner code, and what the
checker's own processes give up so that learner code, the same user, cannot reach them.

- :func:`seal_self`: ``PR_SET_DUMPABLE 0`` in the caller (the process that decides the verdict) for the length of
  a check: no ptrace (gdb), no ``/proc/<pid>/mem``, no ``/proc/<pid>/fd/N`` of it from another process;
- :func:`confine`, in a worker before it runs anything: ``no_new_privs``; no capabilities (for a check run as
  root); a seccomp filter that fails
  ``ptrace``, ``process_vm_readv``/``writev`` and ``pidfd_getfd`` with EPERM; and a Landlock ruleset under
  which the worker and everything it starts writes only below the folders it is given (its work folder, its
  private temporary folder) and to the devices of :func:`device_files`, and, where the kernel has Landlock's
  scopes, signals no process outside.

Where the kernel lacks one of them, :func:`missing` names it, and a check says so once, in one line.

This file imports only the standard library: the supervisor loads it from ``python -I -S``.
"""
from __future__ import annotations

import ctypes
import os
import platform
import stat
import struct

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# Syscalls a worker may not make: (x86_64, aarch64) numbers, and the audit architecture of each.
_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_DENIED = {"ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
           "pidfd_getfd": (438, 438)}
_X32_BIT = 0x40000000
_CAPSET = {"x86_64": 126, "aarch64": 91}
_CAPABILITY_VERSION_3 = 0x20080522

# Landlock (the same syscall numbers on every architecture).
_LANDLOCK_CREATE, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT = 444, 445, 446
_LANDLOCK_VERSION = 1
_RULE_PATH_BENEATH = 1
_WRITE_RIGHTS_V1 = 2 | 16 | 32 | 64 | 128 | 256 | 512 | 1024 | 2048 | 4096   # write, remove, make anything
_REFER, _TRUNCATE = 8192, 16384
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.syscall.restype = ctypes.c_long


def _prctl(option: int, *args: int) -> int:
    values = [ctypes.c_ulong(a) for a in (*args, 0, 0, 0, 0)[:4]]
    return _LIBC.prctl(option, *values)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where it has none (or it is switched off)."""
    version = _LIBC.syscall(_LANDLOCK_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_VERSION))
    return max(0, int(version))


def gpu_present() -> bool:
    """Whether the NVIDIA driver's devices are here. CUDA then writes below the worker's own ``/proc/self`` as it
    starts: without that folder in the ruleset, its first allocation fails with cudaErrorOperatingSystem (on the
    H200, results/logs/landlock_variants2_h200_20261204T0222.txt), so a worker on such a machine may write there."""
    return os.path.exists("/dev/nvidiactl")


def device_files() -> list[str]:
    """What a worker may write besides its folders: the character devices (``/dev/null``, a terminal, the GPU's
    nodes) and its terminals, not ``/dev/shm``, where a file would outlive the check. Where there is an NVIDIA GPU,
    the whole of ``/dev`` and the worker's own ``/proc/self``, as CUDA was seen to start under on the H200
    (results/logs/landlock_variants2_h200_20261204T0222.txt)."""
    if gpu_present():
        return ["/dev", "/proc/self"]
    out = []
    for name in sorted(os.listdir("/dev")):
        path = os.path.join("/dev", name)
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISCHR(mode) or (name == "pts" and stat.S_ISDIR(mode)):
            out.append(path)
    return out


def missing() -> list[str]:
    """The protections this machine lacks, named as a learner would read them."""
    out = []
    if platform.machine() not in _ARCH:
        out.append(f"seccomp (no syscall table for {platform.machine()}: ptrace is not refused)")
    abi = landlock_abi()
    if abi == 0:
        out.append("Landlock (learner code may write outside its folder; the check's watch still catches it)")
    elif gpu_present():
        out.append("Landlock's hold on /dev/shm (where there is an NVIDIA GPU the worker may write all of /dev, so a "
                   "file it leaves in /dev/shm outlives the check; the course reads nothing there)")
    elif abi < 6:
        out.append(f"Landlock scopes (ABI {abi} < 6: learner code may signal the checker, which then fails it)")
    return out


class Sealed:
    """``with Sealed():``: the calling process is not dumpable inside, as it was before after."""

    def __enter__(self):
        self.before = _prctl(PR_GET_DUMPABLE)
        _prctl(PR_SET_DUMPABLE, 0)
        return self

    def __exit__(self, *exc):
        if self.before > 0:
            _prctl(PR_SET_DUMPABLE, self.before)


def _seccomp_filter() -> bytes | None:
    machine = platform.machine()
    if machine not in _ARCH:
        return None
    column = 0 if machine == "x86_64" else 1
    deny = 0x00050000 | 1                   # SECCOMP_RET_ERRNO | EPERM
    allow = 0x7FFF0000                      # SECCOMP_RET_ALLOW
    numbers = [nrs[column] for nrs in _DENIED.values()]
    ops = [(0x20, 0, 0, 4),                 # A = seccomp_data.arch
           (0x15, 1, 0, _ARCH[machine]),    # native: go on; else deny
           (0x06, 0, 0, deny),
           (0x20, 0, 0, 0)]                 # A = seccomp_data.nr
    if machine == "x86_64":
        ops.append((0x35, len(numbers) + 1, 0, _X32_BIT))    # x32 calls: deny
    for i, nr in enumerate(numbers):
        ops.append((0x15, len(numbers) - i, 0, nr))         # jump to deny
    ops += [(0x06, 0, 0, allow), (0x06, 0, 0, deny)]
    return b"".join(struct.pack("HBBI", *op) for op in ops)


def _install_seccomp() -> bool:
    program = _seccomp_filter()
    if program is None:
        return False
    buffer = ctypes.create_string_buffer(program, len(program))

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = Prog(len(program) // 8, ctypes.addressof(buffer))
    return _LIBC.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog),
                       ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0


def _install_landlock(writable: list[str]) -> bool:
    abi = landlock_abi()
    if abi == 0:
        return False
    rights = _WRITE_RIGHTS_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    scoped = (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0
    attr = struct.pack("QQQ", rights, 0, scoped)[:8 if abi < 4 else (16 if abi < 6 else 24)]
    attr_buffer = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _LIBC.syscall(_LANDLOCK_CREATE, attr_buffer, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return False
    try:
        for path in writable:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", rights if os.path.isdir(path)
                                                               else rights & (2 | _TRUNCATE), fd), 12)
                _LIBC.syscall(_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), rule,
                              ctypes.c_uint32(0))
            finally:
                os.close(fd)
        return _LIBC.syscall(_LANDLOCK_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0)) == 0
    finally:
        os.close(ruleset)


def _drop_capabilities() -> bool:
    """No capability left (a check run as root: CAP_SYS_PTRACE would reach a process that is not dumpable)."""
    if os.geteuid() != 0 or platform.machine() not in _CAPSET:
        return True
    header = ctypes.create_string_buffer(struct.pack("Ii", _CAPABILITY_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(bytes(24), 24)                 # effective, permitted, inheritable: none
    return _LIBC.syscall(_CAPSET[platform.machine()], header, data) == 0


def confine(writable: list[str]) -> dict[str, bool]:
    """In the calling process (a worker, before its own code): the Landlock ruleset that lets it write only below
    ``writable``, no capabilities, no_new_privs and the seccomp filter; which of them took."""
    nnp = _prctl(PR_SET_NO_NEW_PRIVS, 1) == 0
    landlock = nnp and _install_landlock([*writable, *device_files()])
    return {"no_new_privs": nnp, "landlock": landlock, "capabilities": _drop_capabilities(),
            "seccomp": nnp and _install_seccomp()}
