"""The interop driver for pygit2, Python's binding of libgit2 (see
driver_args.py for the command line)."""

import os
import sys
import tempfile

import pygit2

import driver_args

# libgit2's depth for "fetch the whole history" (GIT_FETCH_DEPTH_UNSHALLOW).
UNSHALLOW = 2147483647


class Callbacks(pygit2.RemoteCallbacks):
    """Credentials from the environment, offered once (libgit2 asks again
    after a refusal, and a driver must not loop), and the ref statuses of
    a push."""

    def __init__(self):
        super().__init__()
        self.asked = False
        self.statuses = {}

    def credentials(self, url, username_from_url, allowed_types):
        if self.asked:
            raise pygit2.GitError("credentials refused")
        self.asked = True
        key = os.environ.get("INTEROP_SSH_KEY")
        user, password = driver_args.credentials()
        if key and allowed_types & pygit2.enums.CredentialType.SSH_KEY:
            return pygit2.Keypair(username_from_url or "git", key + ".pub", key, "")
        if user and allowed_types & pygit2.enums.CredentialType.USERPASS_PLAINTEXT:
            return pygit2.UserPass(user, password or "")
        raise pygit2.GitError("no credentials for this server")

    def certificate_check(self, certificate, valid, host):
        # HTTPS is verified against INTEROP_CA; SSH host keys of the test
        # servers are not known in advance.
        return bool(valid) or "INTEROP_SSH_KEY" in os.environ

    def push_update_reference(self, refname, message):
        self.statuses[refname] = message


def clone(positional, options):
    url, target = positional
    pygit2.clone_repository(
        url, target, callbacks=Callbacks(), depth=options.get("depth", 0)
    )


def fetch(positional, options):
    (target,) = positional
    repo = pygit2.Repository(target)
    depth = UNSHALLOW if options.get("unshallow") else options.get("depth", 0)
    repo.remotes["origin"].fetch(callbacks=Callbacks(), depth=depth)


def push(positional, options):
    target, refspecs = positional[0], positional[1:]
    if options.get("atomic"):
        raise driver_args.Unsupported("libgit2 has no atomic push")
    repo = pygit2.Repository(target)
    callbacks = Callbacks()
    repo.remotes["origin"].push(
        refspecs, callbacks=callbacks, push_options=options["option"] or None
    )
    refused = False
    for name, message in sorted(callbacks.statuses.items()):
        if message is None:
            print(f"ok {name}")
        else:
            refused = True
            print(f"ng {name} {message}")
    return 1 if refused else 0


def ls_remote(positional, options):
    (url,) = positional
    if options.get("protocol", 0) != 0:
        raise driver_args.Unsupported("libgit2 speaks protocol v0 only")
    with tempfile.TemporaryDirectory() as scratch:
        repo = pygit2.init_repository(scratch, bare=True)
        remote = repo.remotes.create_anonymous(url)
        for head in remote.list_heads(callbacks=Callbacks()):
            print(f"{head.oid} {head.name}")


if __name__ == "__main__":
    ca = os.environ.get("INTEROP_CA")
    if ca:
        pygit2.settings.set_ssl_cert_locations(ca, None)
    driver_args.run(
        {"clone": clone, "fetch": fetch, "push": push, "ls-remote": ls_remote}
    )
