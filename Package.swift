// swift-tools-version:6.0
import PackageDescription

// No Swift package dependencies by design: the toolchain plus Debian's C libraries, each through a
// system-library target whose `.apt` provider names the -dev package that supplies its headers.
let package = Package(
    name: "siwa-upgrade",
    // iOS for the UpgradeClient library alone: an extension target adds that product, which needs
    // nothing but Foundation; the server's targets build on Linux and macOS.
    platforms: [.macOS(.v15), .iOS(.v15)],
    products: [
        .executable(name: "upgrade-cli", targets: ["upgrade-cli"]),
        .library(name: "UpgradeEngine", targets: ["UpgradeEngine"]),
        .library(name: "UpgradeClient", targets: ["UpgradeClient"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        .systemLibrary(
            name: "CCrypt",
            pkgConfig: "libxcrypt",
            providers: [.apt(["libcrypt-dev"]), .brew(["libxcrypt"])]
        ),
        .systemLibrary(
            name: "CArgon2",
            pkgConfig: "libargon2",
            providers: [.apt(["libargon2-dev"]), .brew(["argon2"])]
        ),
        // Apple's endpoints over HTTPS. FoundationNetworking is itself built on this libcurl.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]
        ),
        // PostgreSQL's client library; Debian keeps its headers in /usr/include/postgresql.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // ICU's spoof checker (UTS #39): script mixing and confusable skeletons of usernames.
        .systemLibrary(
            name: "CICU",
            pkgConfig: "icu-i18n",
            providers: [.apt(["libicu-dev"]), .brew(["icu4c"])]
        ),
        // CICU behind plain C types: Foundation's own ICU has types of the same names, so Swift
        // cannot import ICU's headers beside it.
        .target(name: "CICUShims", dependencies: ["CICU"]),
        // The pure state machines: no I/O, no clock, no dependency at all (docs/architecture.md §4).
        .target(name: "UpgradeMachines"),
        .target(
            name: "UpgradeEngine",
            dependencies: [
                "UpgradeMachines", "CSQLite", "COpenSSL", "CCrypt", "CArgon2", "CCurl", "CLibPQ", "CICUShims",
                "CSystem",
            ]
        ),
        // epoll, eventfd, accept4, getrandom, futex and a signal forwarder: what Glibc does not expose to Swift.
        .target(name: "CSystem"),
        // The event-loop HTTP/1.1 server and its parser: knows nothing of the engine (docs/architecture.md §11).
        .target(name: "HTTPCore", dependencies: ["CSystem"]),
        .target(
            name: "UpgradeAPI",
            dependencies: ["UpgradeEngine", "HTTPCore"]
        ),
        // Apple's endpoints, and the emulator's own, for development and tests: outside the library
        // products, so no server links it; upgrade-cli does for `serve --dev`, `demo` and `emulator serve`.
        .target(name: "AppleEmulator", dependencies: ["UpgradeEngine", "HTTPCore", "UpgradeAPI"]),
        // The REST API for an Account Authentication Modification extension: Foundation only. Its
        // sources live in the package an app adds from Xcode (Clients/UpgradeClient), which builds it
        // without the server's system libraries.
        .target(name: "UpgradeClient", path: "Clients/UpgradeClient/Sources/UpgradeClient"),
        // The example extension's flow, everything but its UIKit shell, as the tests drive it;
        // Scripts/typecheck-ios checks the whole extension against Apple's declarations.
        .target(
            name: "AccountModificationExtension",
            dependencies: ["UpgradeClient"],
            path: "Examples/AccountModificationExtension",
            exclude: [
                "AccountModificationViewController.swift", "Info.plist", "AccountModificationExtension.entitlements",
            ]
        ),
        // A minimal server answering /healthz, for Benchmarks/http-load.sh and the descriptor-exhaustion test.
        .executableTarget(name: "http-load-server", dependencies: ["HTTPCore"]),
        .executableTarget(
            name: "upgrade-cli",
            dependencies: ["UpgradeEngine", "UpgradeAPI", "AppleEmulator"]
        ),
        .executableTarget(
            name: "Benchmarks",
            dependencies: ["UpgradeEngine", "AppleEmulator"],
            path: "Benchmarks",
            exclude: [
                "README.md", "http-load.sh", "import-rows.sh", "latency.lua", "peer-compare.sh", "peers",
                "provision-batch.sh", "readyz-ab.sh", "smoke.sh", "soak.py", "upgrade-cpu-ab.sh",
            ]
        ),
        .testTarget(name: "UpgradeMachinesTests", dependencies: ["UpgradeMachines"]),
        .testTarget(
            name: "UpgradeEngineTests",
            dependencies: ["UpgradeEngine", "AppleEmulator", "UpgradeTestSupport"]
        ),
        // What the tests share: the backends, the PostgreSQL test cluster, the built upgrade-cli; for the
        // live-server tests the development server on loopback, a database of its own per backend,
        // ticket minting. A test target, so release builds leave it out.
        .testTarget(
            name: "UpgradeTestSupport",
            dependencies: ["UpgradeAPI", "AppleEmulator"],
            path: "Tests/UpgradeTestSupport"
        ),
        .testTarget(
            name: "UpgradeAPITests",
            dependencies: ["UpgradeAPI", "AppleEmulator", "UpgradeTestSupport"]
        ),
        // Drives the client, and the example extension's flow, against the real server on loopback.
        .testTarget(
            name: "UpgradeClientTests",
            dependencies: [
                "UpgradeClient", "UpgradeAPI", "AppleEmulator", "AccountModificationExtension", "UpgradeTestSupport",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
