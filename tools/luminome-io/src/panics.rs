//! Panics that dependencies raise on corrupt input, caught at our boundary: a reader that
//! `unwrap`s bad data (bigtools on a damaged bigWig, say) becomes an [`InputError`] naming the
//! file, not an abort with a backtrace.
//!
//! [`guard`] runs the dependency's code under `catch_unwind` with a thread-local flag set; a
//! panic hook installed once (wrapping whatever hook was there) keeps such panics quiet and keeps
//! their message for the error. Panics anywhere else still print as usual: they are our bugs.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Once;

use crate::error::InputError;

thread_local! {
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    static MESSAGE: RefCell<String> = const { RefCell::new(String::new()) };
}

static HOOK: Once = Once::new();

fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) {
                let text = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                MESSAGE.with(|m| *m.borrow_mut() = text);
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f` (a dependency reading `path`); a panic inside it becomes an error naming the file,
/// `what` was being done, and the dependency's own message.
pub fn guard<T>(
    path: &Path,
    what: &str,
    f: impl FnOnce() -> Result<T, InputError>,
) -> Result<T, InputError> {
    install_hook();
    let was = GUARDED.with(|g| g.replace(true));
    let out = catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    match out {
        Ok(r) => r,
        Err(_) => {
            let msg = MESSAGE.with(|m| std::mem::take(&mut *m.borrow_mut()));
            Err(InputError::file(
                path,
                format!("{what}: the reader failed on corrupt data ({msg}); the file is damaged or not in the expected format"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_becomes_an_error_naming_the_file() {
        let e = guard(
            Path::new("x.bw"),
            "reading chr1",
            || -> Result<(), InputError> {
                // What bigtools does on a damaged block.
                let parsed: Result<u8, String> = std::hint::black_box(Err("BadData".into()));
                parsed.unwrap();
                Ok(())
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("x.bw: reading chr1") && e.contains("BadData"),
            "{e}"
        );
        assert_eq!(guard(Path::new("x"), "ok", || Ok(3)).unwrap(), 3);
    }
}
