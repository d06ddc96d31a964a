//! TLS for outbound HTTPS (platform API, merchant endpoint): rustls with the
//! `ring` provider, which builds without a C toolchain beyond `cc`.

/// Installs the process-wide rustls provider once; later calls do nothing.
pub fn install_default_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another provider was installed first: that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
