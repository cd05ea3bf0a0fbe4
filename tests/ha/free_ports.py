#!/usr/bin/env python3
"""Loopback TCP ports for test servers that must be told their port before
they start (etcd, PostgreSQL, MariaDB, a coordinator's several endpoints).

  free_ports.py N    prints N distinct free ports, one per line

Contract: within one process, free_port() never returns the same port twice,
and a port it returns was free (bindable on 127.0.0.1) when it was chosen.
Nothing holds the port afterwards, so another process may still take it; to
make that unlikely the ports come from below the kernel's ephemeral range,
where outgoing connections (which pick their local port from that range) and
other `bind(port 0)` callers never land. Two tests running side by side draw
at random from about 12,000 ports, so they rarely meet.

History: drawing each port with bind(port 0) and closing the socket let the
kernel hand the same port out twice in a row; a coordinator's HTTP server
then took the port its replication endpoint was given, and it could not lead
("Address already in use").
"""
import random
import socket
import sys

_given = set()
_SPAN = 12000  # how many ports below the ephemeral range to draw from


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _kernel_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_port():
    """A free loopback port this process has not been given before."""
    high = _ephemeral_low() - 1
    low = max(1024, high - _SPAN)
    for _ in range(1000):
        port = random.randint(low, high) if high - low >= 1000 else _kernel_port()
        if port not in _given and _bindable(port):
            _given.add(port)
            return port
    raise RuntimeError("no free loopback port found in 1000 tries")


if __name__ == "__main__":
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
        print(free_port())
