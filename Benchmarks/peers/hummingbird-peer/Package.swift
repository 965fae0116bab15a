// swift-tools-version:6.2
// A Hummingbird server answering GET /ping like the server's GET /healthz, for the side-by-side run in
// Benchmarks/peer-compare.sh. Used only for that comparison: never a dependency of the product, and
// not built by CI.
import PackageDescription

let package = Package(
    name: "HummingbirdPeer",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1")
    ],
    targets: [
        .executableTarget(
            name: "HummingbirdPeer",
            dependencies: [.product(name: "Hummingbird", package: "hummingbird")]
        )
    ]
)
