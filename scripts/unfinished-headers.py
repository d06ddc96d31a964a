#!/usr/bin/env python3
"""What connections that never finish their headers cost a server.

    scripts/unfinished-headers.py HOST:PORT PID [CONNECTIONS] [HEADER_BYTES]

Opens CONNECTIONS (default 1,024) connections to HOST:PORT, spread over
127.0.0.1 to 127.0.0.4 as their source (the per-address cap is 256), each
sending a request line and HEADER_BYTES (default 380,000) of one header
that never ends, and holds them open; then prints the server's resident
memory (VmRSS) and its peak (VmHWM) from /proc/PID/status, before and
after, and how the connections ended.
"""

import socket
import sys
import time


def memory(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = value.strip()
    return fields


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    pid = int(sys.argv[2])
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 380_000
    print("before:", memory(pid))
    head = b"POST /notifications?topic=payment&id=1 HTTP/1.1\r\nhost: x\r\nx-pad: "
    chunk = b"p" * 16_384
    conns, refused, answered, closed = [], 0, 0, 0
    for i in range(count):
        s = socket.socket()
        s.bind((f"127.0.0.{1 + i % 4}", 0))
        try:
            s.connect((host, int(port)))
            s.setblocking(False)
            s.send(head)
            conns.append([s, len(head)])
        except OSError:
            refused += 1
    # Feed every connection until it has sent its bytes or the server
    # stopped reading (a full socket buffer, or closed).
    deadline = time.time() + 60
    while time.time() < deadline:
        progress = False
        for c in conns:
            s, sent = c
            if s is None or sent >= size:
                continue
            try:
                n = s.send(chunk[: size - sent])
                c[1] += n
                progress = progress or n > 0
            except BlockingIOError:
                pass
            except OSError:
                c[0] = None
                closed += 1
        if not progress:
            break
    time.sleep(2)
    print("holding:", memory(pid))
    for s, _ in conns:
        if s is None:
            continue
        try:
            data = s.recv(64)
            if data.startswith(b"HTTP/1.1 431"):
                answered += 1
            elif data == b"":
                closed += 1
        except (BlockingIOError, OSError):
            pass
    sent = sum(min(c[1], size) for c in conns)
    print(
        f"{len(conns)} connections ({refused} refused), {sent / 1e6:.0f} MB of headers sent, "
        f"{answered} answered 431, {closed} closed"
    )
    for s, _ in conns:
        if s is not None:
            s.close()


if __name__ == "__main__":
    main()
