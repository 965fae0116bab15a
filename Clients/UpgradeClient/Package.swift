// swift-tools-version:6.0
import PackageDescription

// The extension's library alone, for an app to add from Xcode (File > Add Package Dependencies >
// Add Local, this folder): Foundation only, no system library, nothing of the server. The
// repository's root package builds the same sources for its tests.
let package = Package(
    name: "UpgradeClient",
    platforms: [.iOS(.v15), .macOS(.v12), .visionOS(.v1)],
    products: [
        .library(name: "UpgradeClient", targets: ["UpgradeClient"])
    ],
    targets: [
        .target(name: "UpgradeClient")
    ],
    swiftLanguageModes: [.v6]
)
