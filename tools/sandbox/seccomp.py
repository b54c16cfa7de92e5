"""A seccomp filter for sandboxed code, built with libseccomp through ctypes (standard library only).

Denied: sockets (no network even without a network namespace), exec, new processes (clone without
CLONE_THREAD, fork, vfork; clone3 answers ENOSYS so threads fall back to clone), tracing and reading
other processes' memory, kill of any process but itself, and kernel-level facilities (mounts,
namespaces, BPF, keyrings, io_uring, modules).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_NE = 1
SCMP_CMP_MASKED_EQ = 7
CLONE_THREAD = 0x00010000

DENIED = (
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "execve", "execveat", "fork", "vfork",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open", "pidfd_getfd",
    "mount", "umount2", "pivot_root", "chroot", "setns", "unshare", "move_mount", "open_tree", "fsopen",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "name_to_handle_at", "open_by_handle_at",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "personality",
)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


def load_library() -> ctypes.CDLL | None:
    """libseccomp, or None when the host has none."""
    path = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(path, use_errno=True)
    except OSError:
        return None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_load.restype = ctypes.c_int
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


def install(lib: ctypes.CDLL, own_pid: int) -> None:
    """Install the filter on the calling process (irreversible; inherited by its threads)."""
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")
    try:
        def rule(name: str, action: int, *cmps: _ArgCmp) -> None:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:
                return  # not a syscall on this architecture
            array = (_ArgCmp * len(cmps))(*cmps) if cmps else None
            rc = lib.seccomp_rule_add_array(ctx, action, number, len(cmps), array)
            if rc < 0:
                raise OSError(-rc, f"seccomp rule for {name} failed")

        eperm = _errno_action(errno.EPERM)
        for name in DENIED:
            rule(name, eperm)
        rule("clone3", _errno_action(errno.ENOSYS))
        rule("clone", eperm, _ArgCmp(0, SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0))
        rule("kill", eperm, _ArgCmp(0, SCMP_CMP_NE, own_pid, 0))
        rule("tgkill", eperm, _ArgCmp(0, SCMP_CMP_NE, own_pid, 0))
        rc = lib.seccomp_load(ctx)
        if rc < 0:
            raise OSError(-rc, "seccomp_load failed")
    finally:
        lib.seccomp_release(ctx)
