//! What the cluster's tests share: etcd clusters, from refstore-testsupport.

pub use refstore_testsupport::etcd;
