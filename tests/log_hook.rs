//! `cuzk_log_set_callback`: the library's records reach the host's callback with their levels
//! and targets, filtered by the level asked for, and nothing reaches stderr meanwhile even
//! under RUST_LOG=trace; with the callback removed they go to stderr again. One test: the
//! logger is the process's.

use std::ffi::{c_char, c_void, CStr, CString};
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::sync::Mutex;

use cuzk::error::Status;
use cuzk::ffi::*;

static RECORDS: Mutex<Vec<(u32, String, String)>> = Mutex::new(Vec::new());
const USER_DATA: usize = 0x5eed;

extern "C" fn collect(user_data: *mut c_void, level: u32, target: *const c_char, message: *const c_char) {
    assert_eq!(user_data as usize, USER_DATA, "user_data comes back untouched");
    // SAFETY: the library passes NUL-terminated strings valid during the call.
    let text = |p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    RECORDS.lock().unwrap().push((level, text(target), text(message)));
}

fn set(callback: cuzk_log_callback, max_level: u32) -> Status {
    cuzk_log_set_callback(callback, USER_DATA as *mut c_void, max_level, std::ptr::null_mut())
}

fn records() -> Vec<(u32, String, String)> {
    std::mem::take(&mut *RECORDS.lock().unwrap())
}

/// Runs `f` with this process's stderr sent to a file, and returns what was written there.
fn captured_stderr(f: impl FnOnce()) -> String {
    let mut file = scratch_file();
    // SAFETY: plain descriptor juggling on fds this function owns; stderr is restored.
    let saved = unsafe { libc::dup(2) };
    assert!(saved >= 0);
    assert!(unsafe { libc::dup2(file.as_raw_fd(), 2) } >= 0);
    f();
    assert!(unsafe { libc::dup2(saved, 2) } >= 0);
    unsafe { libc::close(saved) };
    let mut text = String::new();
    // The file shares its offset with the descriptor written through: back to the start.
    file.seek(SeekFrom::Start(0)).unwrap();
    file.read_to_string(&mut text).unwrap();
    text
}

fn scratch_file() -> std::fs::File {
    let path = std::env::temp_dir().join(format!("cuzk-log-hook-{}.txt", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    file
}

#[test]
fn records_reach_the_callback_with_levels_and_targets_and_not_stderr() {
    // Without the callback, every record would be printed.
    std::env::set_var("RUST_LOG", "trace");
    let stderr = captured_stderr(|| {
        let mut err = std::ptr::null_mut();
        let status = cuzk_log_set_callback(Some(collect), std::ptr::null_mut(), 9, &mut err);
        assert_eq!(status, Status::InvalidArgument, "level 9 is no level");
        let message = unsafe { CStr::from_ptr(cuzk_error_message(err)) }.to_string_lossy().into_owned();
        assert!(message.contains("max_level 9"), "{message}");
        cuzk_error_free(err);

        assert_eq!(set(Some(collect), CUZK_LOG_INFO), Status::Ok);
        // The engine's start is logged at INFO by cuzk::engine.
        let dir = CString::new(std::env::temp_dir().to_str().unwrap()).unwrap();
        let mut config: cuzk_config = unsafe { std::mem::zeroed() };
        config.struct_size = size_of::<cuzk_config>() as u32;
        assert_eq!(cuzk_config_default(&mut config, std::ptr::null_mut()), Status::Ok);
        (config.cpu_only, config.num_threads, config.param_cache_dir) = (true, 1, dir.as_ptr());
        let mut engine = std::ptr::null_mut();
        assert_eq!(cuzk_engine_new(&config, &mut engine, std::ptr::null_mut()), Status::Ok);
        log::debug!(target: "host", "filtered out at INFO");
        log::warn!(target: "host", "a warning");
        let got = records();
        assert!(
            got.iter().any(|(level, target, message)| *level == CUZK_LOG_INFO
                && target.starts_with("cuzk::engine")
                && message.starts_with("cuzk engine started")),
            "{got:?}"
        );
        assert!(got.contains(&(CUZK_LOG_WARN, "host".into(), "a warning".into())), "{got:?}");
        assert!(got.iter().all(|(level, ..)| *level <= CUZK_LOG_INFO), "nothing below INFO: {got:?}");

        assert_eq!(set(Some(collect), CUZK_LOG_TRACE), Status::Ok);
        log::trace!(target: "host", "a trace");
        assert_eq!(records(), [(CUZK_LOG_TRACE, "host".to_string(), "a trace".to_string())]);

        assert_eq!(set(Some(collect), CUZK_LOG_ERROR), Status::Ok);
        log::warn!(target: "host", "filtered out at ERROR");
        assert!(records().is_empty());

        cuzk_engine_free(engine);
        // Back to stderr (RUST_LOG=trace).
        assert_eq!(set(None, 0), Status::Ok);
        log::warn!(target: "host", "to stderr again");
        assert!(records().is_empty());
    });
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr: {stderr}");
    assert!(lines[0].contains("to stderr again"), "stderr: {stderr}");
}
