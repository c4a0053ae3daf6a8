//! Consistency checks of a reftable stack (`refs verify`): `tables.list`
//! and every table it names, read block by block, with every ref name
//! checked. A finding names the file at fault, so the damage can be found
//! and the table restored.

use super::backend::ReftableBackend;
use super::reader::Table;
use super::tables_list;
use crate::files::verify::{Finding, Severity};
use crate::RefName;

impl ReftableBackend {
    /// Checks `tables.list` and every block of every table it names. Only
    /// I/O failures other than a missing file are errors of the call.
    pub fn verify(&self) -> Result<Vec<Finding>, refstore_fs::Error> {
        let mut findings = Vec::new();
        let mut error = |location: String, id: &'static str, message: String| {
            findings.push(Finding {
                severity: Severity::Error,
                location,
                id,
                message,
            })
        };
        let list_path = self.dir.join("tables.list");
        let names = match self.vfs.read(&list_path) {
            Ok(content) => match tables_list::parse(&content) {
                Ok(names) => names,
                Err(e) => {
                    error(
                        "reftable/tables.list".into(),
                        "badReftableTableList",
                        e.to_string(),
                    );
                    return Ok(findings);
                }
            },
            Err(e) if e.is_not_found() => Vec::new(),
            Err(e) => return Err(e),
        };
        for name in names {
            let location = format!("reftable/{name}");
            let bytes = match self.vfs.read(&self.dir.join(&name)) {
                Ok(bytes) => bytes,
                Err(e) if e.is_not_found() => {
                    error(
                        location,
                        "missingReftableTable",
                        "tables.list names this table but the file is missing".into(),
                    );
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Err(e) = check_table(bytes) {
                let (id, message) = e;
                error(location, id, message);
            }
        }
        Ok(findings)
    }
}

/// Reads every ref and log record of a table; the first problem found.
fn check_table(bytes: Vec<u8>) -> Result<(), (&'static str, String)> {
    let corrupt = |e: super::Error| ("badReftableTable", e.to_string());
    let table = Table::new(bytes).map_err(corrupt)?;
    for record in table.refs().map_err(corrupt)? {
        let record = record.map_err(corrupt)?;
        if RefName::new(&record.name).is_err() {
            return Err((
                "badRefName",
                format!(
                    "the table holds a ref named '{}', which is not a valid ref name",
                    String::from_utf8_lossy(&record.name)
                ),
            ));
        }
    }
    for record in table.logs().map_err(corrupt)? {
        record.map_err(corrupt)?;
    }
    Ok(())
}
