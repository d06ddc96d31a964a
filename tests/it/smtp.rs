//! A real SMTP server on loopback for the tests: it accepts every message
//! and keeps what it was told (the envelope's AUTH line and each DATA), and
//! can be a server that offers no STARTTLS, or one that refuses everything.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// What the server was told, in order.
#[derive(Debug, Default, Clone)]
pub struct Received {
    /// The DATA of each message.
    pub mails: Vec<String>,
    /// Each AUTH command as sent.
    pub auth: Vec<String>,
}

pub struct SmtpServer {
    pub port: u16,
    pub got: Arc<Mutex<Received>>,
}

impl SmtpServer {
    /// An SMTP relay that offers AUTH PLAIN and no STARTTLS.
    pub async fn start() -> SmtpServer {
        Self::answering(true).await
    }

    /// One that answers 554 to every message (`accept` false).
    pub async fn answering(accept: bool) -> SmtpServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Received::default()));
        let keep = got.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let keep = keep.clone();
                tokio::spawn(async move {
                    let _ = session(stream, keep, accept).await;
                });
            }
        });
        SmtpServer { port, got }
    }

    pub fn mails(&self) -> Vec<String> {
        self.got.lock().unwrap().mails.clone()
    }
}

async fn session(
    stream: tokio::net::TcpStream,
    keep: Arc<Mutex<Received>>,
    accept: bool,
) -> std::io::Result<()> {
    let (r, mut w) = stream.into_split();
    let mut lines = BufReader::new(r).lines();
    w.write_all(b"220 test ESMTP\r\n").await?;
    let mut data: Option<String> = None;
    while let Some(line) = lines.next_line().await? {
        if let Some(d) = &mut data {
            if line == "." {
                let mail = std::mem::take(d);
                data = None;
                if accept {
                    keep.lock().unwrap().mails.push(mail);
                    w.write_all(b"250 queued\r\n").await?;
                } else {
                    w.write_all(b"554 refused\r\n").await?;
                }
            } else {
                d.push_str(&line);
                d.push('\n');
            }
            continue;
        }
        let verb = line
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        let reply: &[u8] = match verb.as_str() {
            "EHLO" => b"250-test\r\n250 AUTH PLAIN\r\n",
            "HELO" => b"250 test\r\n",
            "AUTH" => {
                keep.lock().unwrap().auth.push(line.clone());
                b"235 ok\r\n"
            }
            "DATA" => {
                data = Some(String::new());
                b"354 go on\r\n"
            }
            "QUIT" => {
                w.write_all(b"221 bye\r\n").await?;
                return Ok(());
            }
            _ => b"250 ok\r\n",
        };
        w.write_all(reply).await?;
    }
    Ok(())
}
