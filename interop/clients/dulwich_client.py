"""The interop driver for dulwich, a Git implementation in Python (see
driver_args.py for the command line)."""

import io
import os
import sys

from dulwich import porcelain
from dulwich.client import get_transport_and_path
from dulwich.config import StackedConfig

import driver_args


def auth():
    user, password = driver_args.credentials()
    return {"username": user, "password": password} if user else {}


def clone(positional, options):
    url, target = positional
    repo = porcelain.clone(
        url,
        target,
        depth=options.get("depth"),
        errstream=io.BytesIO(),
        **auth(),
    )
    repo.close()


def fetch(positional, options):
    (target,) = positional
    porcelain.fetch(
        target,
        "origin",
        depth=options.get("depth"),
        unshallow=options.get("unshallow", False),
        errstream=io.BytesIO(),
        outstream=io.StringIO(),
        **auth(),
    )


def push(positional, options):
    target, refspecs = positional[0], positional[1:]
    errors = io.BytesIO()
    result = porcelain.push(
        target,
        "origin",
        refspecs,
        atomic=options.get("atomic", False),
        push_options=options["option"] or None,
        errstream=errors,
        outstream=io.BytesIO(),
        **auth(),
    )
    statuses = result.ref_status
    if statuses is None:
        # No report from the server (a local push): every ref went in.
        statuses = {spec.split(":")[-1].encode(): None for spec in refspecs}
    refused = False
    for ref, error in sorted(statuses.items()):
        name = ref.decode()
        if error is None:
            print(f"ok {name}")
        else:
            refused = True
            print(f"ng {name} {error}")
    sys.stderr.write(errors.getvalue().decode(errors="replace"))
    return 1 if refused else 0


def ls_remote(positional, options):
    (url,) = positional
    client, path = get_transport_and_path(
        url,
        config=StackedConfig.default(),
        ssh_command=os.environ.get("GIT_SSH_COMMAND"),
        **auth(),
    )
    result = client.get_refs(path.encode(), protocol_version=options.get("protocol"))
    for name, oid in sorted(result.refs.items()):
        if oid is not None:
            print(f"{oid.decode()} {name.decode()}")


if __name__ == "__main__":
    os.environ.setdefault("GIT_TERMINAL_PROMPT", "0")
    driver_args.run(
        {"clone": clone, "fetch": fetch, "push": push, "ls-remote": ls_remote}
    )
