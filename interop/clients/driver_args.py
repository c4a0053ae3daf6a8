"""The command line every interop client driver takes, and its exits.

refstore's interop suite (crates/refstore-cli/tests/interop_clients.rs)
runs each third-party client through a small driver with one command line:

    clone URL DIR [--depth N]          clone every branch (and tags) into DIR
    fetch DIR [--depth N | --unshallow] fetch every branch of origin into
                                       refs/remotes/origin/*, with tags
    push DIR [--atomic] [--option O]... REFSPEC...
                                       push to origin; one line per ref:
                                       "ok REF" or "ng REF REASON"
    ls-remote URL [--protocol 0|2]     one line per advertised ref:
                                       "OID NAME" (peeled tags as NAME^{})

Credentials come from the environment: INTEROP_USER and INTEROP_PASSWORD
for HTTP(S), INTEROP_SSH_KEY (a private key file) for SSH, INTEROP_CA (a
PEM certificate to trust) for HTTPS. Exit 0: done; 1: refused or failed,
with the client's message on stderr; 3: this client has no way to do it
(the message says why).
"""

import os
import sys

UNSUPPORTED = 3


class Unsupported(Exception):
    """The client has no API for what was asked."""


def parse(argv):
    """The command and its arguments: (command, positional, options), where
    options maps flags to values (lists for --option)."""
    if not argv:
        usage()
    command, rest = argv[0], argv[1:]
    positional, options = [], {"option": []}
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in ("--depth", "--protocol", "--option"):
            if i + 1 >= len(rest):
                usage()
            if arg == "--option":
                options["option"].append(rest[i + 1])
            else:
                options[arg[2:]] = int(rest[i + 1])
            i += 2
        elif arg in ("--unshallow", "--atomic"):
            options[arg[2:]] = True
            i += 1
        else:
            positional.append(arg)
            i += 1
    return command, positional, options


def credentials():
    """(user, password) for HTTP, or (None, None) when anonymous."""
    return os.environ.get("INTEROP_USER"), os.environ.get("INTEROP_PASSWORD")


def usage():
    sys.stderr.write(__doc__)
    sys.exit(2)


def run(commands):
    """Runs the command named on the command line with `commands`, a dict
    from command name to a function of (positional, options)."""
    command, positional, options = parse(sys.argv[1:])
    if command not in commands:
        usage()
    try:
        code = commands[command](positional, options)
    except Unsupported as e:
        sys.stderr.write(f"unsupported: {e}\n")
        sys.exit(UNSUPPORTED)
    except Exception as e:  # the client's own error is the message
        sys.stderr.write(f"{type(e).__name__}: {e}\n")
        sys.exit(1)
    sys.stdout.flush()
    sys.exit(code or 0)
