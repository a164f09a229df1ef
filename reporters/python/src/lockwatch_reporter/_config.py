# SPDX-License-Identifier: BSD-3-Clause
"""Where the reporter sends and how it signs: LOCKWATCH_SAMPLES,
LOCKWATCH_KEY_FILE and LOCKWATCH_OWNER (docs/reporters.md "Configuration"),
read once, in two steps.  load() only reads the settings and tells "off"
(in any case) from the rest: the first lock call of the process makes the reporter, so
load() may run on the lock path, and it does no I/O.  Config.resolve()
applies them: it parses the destinations, reads the key file and resolves
the names, which may block on DNS or a slow disk (and log), so only the
reporter's own thread calls it, once (_sender.py).  A destination that does
not resolve, or a key file that cannot be used, is logged once (logging,
logger "lockwatch_reporter") and turns that destination, or the whole
reporter, off.  Nothing here raises into the application.
"""

import logging
import os
import socket

log = logging.getLogger("lockwatch_reporter")

DEFAULT_SAMPLES = "127.0.0.1:9717"
MAX_DESTINATIONS = 8
KEY_MIN, KEY_MAX = 16, 4096
OWNER_MAX = 200


class Config:
    """destinations: [(family, sockaddr)]; key: bytes or None; process: str.
    enabled is False when reporting is off (no destination, bad key).
    settings, when given, is (samples, key_file, owner) as load() read them,
    still to be applied by resolve(): until then destinations is empty, key
    None, process the default and enabled True."""

    def __init__(self, destinations, key, process, enabled=True, settings=None):
        self.destinations = destinations
        self.key = key
        self.process = process
        self.settings = settings
        self.enabled = enabled and bool(destinations or settings)

    def resolve(self):
        """Apply the settings (once): parse LOCKWATCH_SAMPLES, take the
        owner, read the key file, resolve the names.  Blocks on DNS and the
        disk: the reporter's thread only.  Returns self.enabled."""
        settings, self.settings = self.settings, None
        if settings is None:
            return self.enabled
        samples, key_file, owner = settings
        if owner:
            if len(owner.encode("utf-8", "surrogateescape")) > OWNER_MAX:
                log.warning("LOCKWATCH_OWNER is longer than %d bytes; using %s",
                            OWNER_MAX, self.process)
            else:
                # the pid too: one name for several processes (a pod's prefork
                # workers, a forked child) would make them one owner
                self.process = "%s:%d" % (owner, os.getpid())
        if key_file is not None and not key_file.strip():
            # a template's unset value: unsigned, which an agent with a key rejects
            log.warning("LOCKWATCH_KEY_FILE is set but empty; datagrams go unsigned")
        elif key_file:
            self.key = read_key(key_file)
            if self.key is None:
                self.enabled = False
                return False
        for host, port in split_destinations(samples):
            d = resolve(host, port)
            if d is not None and d in self.destinations:
                # two names of one agent would count every sample twice
                log.warning("LOCKWATCH_SAMPLES: %s:%d is %s:%d again; sending there once",
                            host, port, d[1][0], d[1][1])
            elif d is not None:
                self.destinations.append(d)
        self.enabled = bool(self.destinations)
        return self.enabled


def split_destinations(text):
    """`host:port[,host:port...]` -> [(host, port)], IPv6 as [addr]:port.
    Entries that do not parse are logged and skipped; at most 8 are kept."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if part.startswith("["):
            end = part.find("]")
            host, rest = part[1:end], part[end + 1:] if end > 0 else ""
            if end < 0 or not rest.startswith(":"):
                log.warning("LOCKWATCH_SAMPLES: %r: expected [addr]:port; skipped", part)
                continue
            port_text = rest[1:]
        else:
            host, sep, port_text = part.rpartition(":")
            if not sep or not host:
                log.warning("LOCKWATCH_SAMPLES: %r: expected host:port; skipped", part)
                continue
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            log.warning("LOCKWATCH_SAMPLES: %r: bad port; skipped", part)
            continue
        if len(out) == MAX_DESTINATIONS:
            log.warning("LOCKWATCH_SAMPLES: more than %d destinations; the rest are ignored",
                        MAX_DESTINATIONS)
            break
        out.append((host, int(port_text)))
    return out


def resolve(host, port):
    """(family, sockaddr) of the first UDP address of host, or None."""
    try:
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_DGRAM)
    except (OSError, UnicodeError) as e:
        log.warning("LOCKWATCH_SAMPLES: %s:%d does not resolve (%s); not sending there",
                    host, port, e)
        return None
    fam, _, _, _, addr = infos[0]
    return (fam, addr)


def read_key(path):
    """The key file's first line (trailing newlines dropped), or None with a
    warning when it cannot be read or its length is outside 16..4096."""
    try:
        with open(path, "rb") as f:
            data = f.read(KEY_MAX + 2)
    except OSError as e:
        log.warning("LOCKWATCH_KEY_FILE: %s: %s; reporting off", path, e)
        return None
    key = data.split(b"\n", 1)[0].rstrip(b"\r")
    if not KEY_MIN <= len(key) <= KEY_MAX:
        log.warning("LOCKWATCH_KEY_FILE: %s: the key must be %d to %d bytes; reporting off",
                    path, KEY_MIN, KEY_MAX)
        return None
    return key


def default_process():
    return "%s:%d" % (socket.gethostname(), os.getpid())


def load(samples=None, key_file=None, owner=None, environ=None):
    """A Config from the arguments, falling back to the environment; unless
    it is off, its settings still to apply (Config.resolve())."""
    env = os.environ if environ is None else environ
    if samples is None:
        samples = env.get("LOCKWATCH_SAMPLES", DEFAULT_SAMPLES)
    if key_file is None:
        key_file = env.get("LOCKWATCH_KEY_FILE")     # "" (set but empty): said in resolve()
    if owner is None:
        owner = env.get("LOCKWATCH_OWNER") or None
    text = samples.strip()
    if text == "" or text.lower() == "off":
        return Config([], None, default_process(), enabled=False)
    return Config([], None, default_process(), settings=(text, key_file, owner))
