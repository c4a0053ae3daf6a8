//! The two services of Git's smart protocol, as every transport names
//! them: HTTP in its URLs, SSH in the command a client runs.

use crate::access::Want;

/// A service git's clients run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// Fetches, clones, ls-remote.
    UploadPack,
    /// Pushes.
    ReceivePack,
}

impl Service {
    /// The service's name on the wire (`git-upload-pack`).
    pub fn name(self) -> &'static str {
        match self {
            Service::UploadPack => "git-upload-pack",
            Service::ReceivePack => "git-receive-pack",
        }
    }

    /// The service of a name on the wire.
    pub fn from_name(name: &str) -> Option<Service> {
        match name {
            "git-upload-pack" => Some(Service::UploadPack),
            "git-receive-pack" => Some(Service::ReceivePack),
            _ => None,
        }
    }

    /// What the service does to the repository, for the access rules.
    pub fn want(self) -> Want {
        match self {
            Service::UploadPack => Want::Read,
            Service::ReceivePack => Want::Write,
        }
    }
}
