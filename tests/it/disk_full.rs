//! A disk that fills never wedges the store: SQLite on a small file system
//! of its own (a tmpfs, mounted as root, as CI runs), filled to the last
//! byte while notifications come, then freed. Every notification answered
//! 200 is decided and delivered afterwards, with no restart. The file
//! system is 8 MiB from the start: less than the WAL's kept length would
//! be without the free space bounding it.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::backends::Backend;
use crate::helpers::*;
use crate::platform::{FakeApi, Merchant};

/// A tmpfs mounted on a folder of its own, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` where this process may not mount (not root): the test then
    /// says so and passes, unless `POINTHOOK_TEST_TMPFS_REQUIRED` is set.
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if mounted {
            return Some(Tmpfs { dir });
        }
        assert!(
            std::env::var_os("POINTHOOK_TEST_TMPFS_REQUIRED").is_none(),
            "cannot mount a tmpfs (root is needed) and POINTHOOK_TEST_TMPFS_REQUIRED is set"
        );
        eprintln!("skipped: mounting a tmpfs needs root");
        None
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .args(["-l"])
            .arg(self.dir.path())
            .status();
    }
}

/// Writes a file until the file system refuses another byte.
fn fill(path: &Path) -> PathBuf {
    let filler = path.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![7u8; 64 << 10];
    while f.write_all(&chunk).is_ok() {}
    let one = [7u8; 512];
    while f.write_all(&one).is_ok() {}
    let _ = f.sync_all();
    filler
}

async fn readyz(app: &TestApp) -> (u16, serde_json::Value) {
    answer(app.client.get(app.url("/readyz")).send().await.unwrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_disk_freed_again_delivers_everything_acknowledged_without_a_restart() {
    let Some(fs) = Tmpfs::mount("8m") else {
        return;
    };
    let api = FakeApi::start().await;
    let merchant = Merchant::start().await;
    let ids: Vec<u64> = (0..120).map(|i| 4_000_000 + i).collect();
    for id in &ids {
        api.payment(&id.to_string(), "approved", "10.00", None);
    }
    let mut tc = TestConfig::default().api(&api.uri()).extra(&format!(
        "[server]\nmax_connections_per_ip = 0\n{}",
        merchant.config()
    ));
    tc.worker_loop = true;
    tc.backend = Backend::Sqlite;
    tc.dir = Some(fs.path().to_path_buf());
    let app = spawn_app_with(tc).await;

    let send = |id: u64| {
        let (client, url) = (
            app.client.clone(),
            app.url(&format!("/notifications?topic=payment&id={id}")),
        );
        async move {
            let pad = serde_json::json!({"resource": id.to_string(), "topic": "payment", "pad": "x".repeat(2000)});
            client
                .post(url)
                .body(pad.to_string())
                .send()
                .await
                .map(|r| r.status().as_u16())
                .unwrap_or(0)
        }
    };
    let mut acknowledged = BTreeSet::new();
    for id in &ids[..20] {
        assert_eq!(send(*id).await, 200, "room on the disk: stored");
        acknowledged.insert(*id);
    }
    let filler = fill(fs.path());
    let mut refused = 0;
    for id in &ids[20..] {
        match send(*id).await {
            200 => {
                acknowledged.insert(*id);
            }
            503 => refused += 1,
            other => panic!("{id}: answered {other}"),
        }
    }
    assert!(refused > 0, "the disk filled: some were refused");
    tokio::time::sleep(Duration::from_millis(1100)).await; // past the readiness cache
    let (status, body) = readyz(&app).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], "disk_full", "said in those words: {body}");

    std::fs::remove_file(&filler).unwrap();
    // The platform sends again what was refused; here, one more each.
    for id in &ids[20..] {
        if !acknowledged.contains(id) && send(*id).await == 200 {
            acknowledged.insert(*id);
        }
    }
    let want: BTreeSet<String> = acknowledged.iter().map(u64::to_string).collect();
    let mut told = BTreeSet::new();
    for _ in 0..1200 {
        told = merchant
            .received()
            .await
            .iter()
            .filter_map(|r| serde_json::from_slice::<serde_json::Value>(&r.body).ok())
            .filter(|e| e["type"] == "payment.updated")
            .filter_map(|e| e["data"]["payment_id"].as_str().map(str::to_owned))
            .collect();
        if want.is_subset(&told) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let missing: Vec<_> = want.difference(&told).collect();
    let jobs: Vec<String> = missing
        .iter()
        .map(|id| format!("{id}: {:?}", app.job(&format!("payment:{id}"))))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged but never delivered after the disk was freed: {jobs:?}"
    );
    assert_eq!(readyz(&app).await.0, 200, "ready again, with no restart");
    app.stop().await;
}
