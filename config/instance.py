"""One instance's ground rules, checked before anything starts: its data folder, its hosts, its secret key.

Standard library only: settings and the launcher (`make run`) read these before
Django or any embedded service is up.
"""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

# Host names that reach this machine only. Serving any other is serving the network (settings.SERVES_NETWORK).
LOCAL_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
LAUNCHER_LOCK = ".launcher.lock"


class InstanceError(RuntimeError):
    """The instance cannot start as asked; the message is for a person and says what to do."""


def serves_network(allowed_hosts: list[str]) -> bool:
    return any(host not in LOCAL_HOSTS for host in allowed_hosts)


def names_real_hosts(allowed_hosts: list[str]) -> bool:
    """True when ALLOWED_HOSTS names a host of the network: neither this machine's names nor a bare wildcard,
    which would accept `Host: localhost` from anyone."""
    return any(host not in LOCAL_HOSTS and host.strip(".*") for host in allowed_hosts)


def is_loopback(bind_host: str) -> bool:
    if bind_host == "localhost":
        return True
    try:
        return ipaddress.ip_address(bind_host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to any interface


def bind_check(bind_host: str, allowed_hosts: list[str]) -> None:
    """Refuse to listen beyond this machine while ALLOWED_HOSTS names only this machine (or anything at all)."""
    if is_loopback(bind_host) or names_real_hosts(allowed_hosts):
        return
    raise InstanceError(
        f"DOCENT_HOST={bind_host} would serve the network, but ALLOWED_HOSTS names no host of it "
        f"({','.join(allowed_hosts) or 'empty'}): anyone could reach it by sending `Host: localhost`. "
        "Set ALLOWED_HOSTS to the names this server answers to (and SECRET_KEY), or leave DOCENT_HOST unset"
    )


def web_bind_check(addresses: list[tuple[str, int] | str | int], allowed_hosts: list[str], *,
                   serves_network: bool) -> None:
    """gunicorn's binds, before it listens (config/web_server.py): beyond loopback only for an instance that
    serves the network (HTTPS by default, no development key) and whose ALLOWED_HOSTS names real hosts.

    The launcher's `bind_check` covers `make run`; a web server started by hand (the multi-machine
    recipe) binds where its own --bind says. A unix socket or an inherited descriptor counts as
    beyond this machine: a proxy in front of it may face the network.
    """
    beyond = [address for address in addresses if not (isinstance(address, tuple) and is_loopback(address[0]))]
    if not beyond:
        return
    shown = ", ".join(f"{address[0]}:{address[1]}" if isinstance(address, tuple) else f"{address}"
                      for address in beyond)
    if not names_real_hosts(allowed_hosts):
        raise InstanceError(
            f"the web server binds {shown}, beyond this machine, but ALLOWED_HOSTS names no host of the network "
            f"({','.join(allowed_hosts) or 'empty'}): anyone could reach it by sending `Host: localhost`. "
            "Set ALLOWED_HOSTS to the names this server answers to, SECRET_KEY and DOCENT_SERVES_NETWORK=true, "
            "or bind 127.0.0.1"
        )
    if not serves_network:
        raise InstanceError(
            f"the web server binds {shown}, beyond this machine, while DOCENT_SERVES_NETWORK=false: "
            "an instance others reach must serve as one (HTTPS by default, no development license key). "
            "Set DOCENT_SERVES_NETWORK=true, or bind 127.0.0.1"
        )


def port_check(bind_host: str, port: int) -> None:
    """Refuse a port another program listens on, before starting anything that would then fail or be shadowed."""
    family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # SO_REUSEADDR as gunicorn sets it: a port in TIME_WAIT from a previous run is free to use.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((bind_host.strip("[]"), port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise InstanceError(
                    f"port {port} on {bind_host} is already in use by another program; "
                    "stop it or set DOCENT_PORT to a free port"
                ) from None
            raise InstanceError(f"cannot listen on {bind_host}:{port}: {exc.strerror or exc}") from None


@dataclass
class DataDirLock:
    """An exclusive hold on a data folder for one launcher's life: released when the process ends, however."""

    path: Path
    fd: int

    def release(self) -> None:
        os.close(self.fd)


def data_dir_lock(data_dir: Path) -> DataDirLock:
    """Hold DATA_DIR for this launcher, or refuse: two launchers on one folder share (and stop) each other's
    services, reapers and metrics."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LAUNCHER_LOCK
    # Not inherited by children (O_CLOEXEC): a daemonized database must not keep the folder locked.
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise InstanceError(
            f"another `make run` (pid {holder}) is already serving DATA_DIR {data_dir}; "
            "stop it first, or set DATA_DIR to another folder for a second instance"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return DataDirLock(path=path, fd=fd)


def secret_key_read_or_create(key_file: Path) -> str:
    """This machine's generated SECRET_KEY: made once, readable by its owner only, the same for every process.

    The key is written to a private temporary file and linked into place, which fails
    if the file exists: processes starting together all end up reading the one
    complete key that won, never an empty or half-written file, never two keys.
    """
    if not key_file.exists():
        candidate = key_file.with_name(f".{key_file.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(50))
                handle.flush()
                os.fsync(handle.fileno())
            os.link(candidate, key_file)
        except FileExistsError:
            pass  # another process's key won the race: use it
        finally:
            candidate.unlink(missing_ok=True)
    if key_file.stat().st_mode & 0o077:
        key_file.chmod(0o600)  # a key file from an older version, made with the umask's mode
    return key_file.read_text().strip()
