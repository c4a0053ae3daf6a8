//! What the encrypted transports are started with: self-signed TLS
//! certificates made in the test, and SSH keys made by ssh-keygen (the
//! users' keys once per test binary: they are only read).

use refstore_server::access::Reloadable;
use refstore_server::ssh::{keys, AuthorizedKeys, SshOptions};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A self-signed certificate for 127.0.0.1 and localhost, and its key.
pub struct Certificate {
    /// The certificate, PEM, as `<name>.crt` (what git is told to trust).
    pub cert: PathBuf,
    /// Its private key, PEM, as `<name>.key`.
    pub key: PathBuf,
    /// The certificate, DER (what a rustls client is told to trust).
    pub der: Vec<u8>,
}

impl Certificate {
    /// A new certificate written as `home/<name>.crt` and `.key`.
    pub fn new(home: &Path, name: &str) -> Certificate {
        let made = rcgen::generate_simple_self_signed(vec![
            "127.0.0.1".to_owned(),
            "localhost".to_owned(),
        ])
        .unwrap();
        let cert = home.join(format!("{name}.crt"));
        let key = home.join(format!("{name}.key"));
        std::fs::write(&cert, made.cert.pem()).unwrap();
        std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
        Certificate {
            cert,
            key,
            der: made.cert.der().to_vec(),
        }
    }

    /// The server's TLS configuration of the files as they are now, as
    /// `--tls-cert` and `--tls-key` make it.
    pub fn server_config(&self) -> Arc<Reloadable<rustls::ServerConfig>> {
        let config = refstore_server::http::tls::server_config(
            &std::fs::read(&self.cert).unwrap(),
            &std::fs::read(&self.key).unwrap(),
        )
        .unwrap();
        Arc::new(Reloadable::new(config))
    }

    /// A TLS client trusting this certificate, over `tcp`.
    pub fn client(
        &self,
        tcp: TcpStream,
    ) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.der.clone().into()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = "127.0.0.1".try_into().unwrap();
        let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        rustls::StreamOwned::new(connection, tcp)
    }
}

/// A key pair made by ssh-keygen: the private key's file and the public
/// key's line.
#[derive(Debug, Clone)]
pub struct Key {
    /// The private key, without a passphrase.
    pub path: PathBuf,
    /// `<type> <base64> <comment>` and a newline, as authorized_keys
    /// holds it.
    pub public: String,
}

/// The key of `user` (`kind` one of ssh-keygen's `-t`), its comment the
/// user's name; made once per test binary.
pub fn user_key(user: &str, kind: &str) -> Key {
    static KEYS: OnceLock<std::sync::Mutex<Vec<(String, Key)>>> = OnceLock::new();
    let name = format!("{user}-{kind}");
    let mut made = KEYS.get_or_init(Default::default).lock().unwrap();
    if let Some((_, key)) = made.iter().find(|(n, _)| *n == name) {
        return key.clone();
    }
    let (path, public) = refstore_testsupport::ssh::keygen(keys_dir(), &name, kind, user);
    let key = Key { path, public };
    made.push((name, key.clone()));
    key
}

/// Where the keys of [`user_key`] are kept while the binary runs.
fn keys_dir() -> &'static Path {
    super::repos::shared_dir("keys")
}

/// The options of an SSH server with the host key made for the test
/// binary, letting in the keys listed in `authorized` (authorized_keys
/// lines).
pub fn ssh_options(authorized: &str) -> SshOptions {
    let host = user_key("host", "ed25519");
    SshOptions {
        host_key: keys::host_key(&std::fs::read_to_string(&host.path).unwrap()).unwrap(),
        authorized_keys: Arc::new(Reloadable::new(AuthorizedKeys::parse(authorized).unwrap())),
    }
}
