import CICUShims

/// ICU's spoof checker, configured for usernames (Unicode Technical Standard #39; docs/usernames.md):
/// the "highly restrictive" restriction level with mixed-number detection, and confusable skeletons.
/// The data is the Unicode data of the ICU the server links (Debian's `libicu`), not a copied table.
///
/// One checker serves every thread: it is configured in `init` and afterwards only ICU's functions
/// that take a `const USpoofChecker *` run on it (the check and the skeleton), which ICU documents as
/// safe to call concurrently on one checker (`unicode/uspoof.h`, "Thread Safety").
final class SpoofChecker: @unchecked Sendable {
    /// What the restriction check found wrong with a string.
    enum Finding: Equatable {
        /// More scripts than the highly restrictive level allows.
        case mixedScripts
        /// Decimal digits of more than one number system.
        case mixedNumbers
    }

    static let shared = SpoofChecker()

    /// The ICU and Unicode versions whose confusables data the skeletons come from, e.g.
    /// `ICU 72.1, Unicode 15.0`. ICU does not promise equal skeletons across its releases, so stored
    /// skeletons are recomputed when this changes (`UsernameSkeletons`).
    static let dataVersion: String = {
        var icu = [CChar](repeating: 0, count: 32)
        var unicode = [CChar](repeating: 0, count: 32)
        icu.withUnsafeMutableBufferPointer { icu in
            unicode.withUnsafeMutableBufferPointer { cicu_versions(icu.baseAddress, $0.baseAddress) }
        }
        func text(_ buffer: [CChar]) -> String {
            String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return "ICU \(text(icu)), Unicode \(text(unicode))"
    }()

    private let checker: OpaquePointer

    private init() {
        var status: Int32 = 0
        guard let opened = cicu_spoof_open(&status) else {
            // ICU's data is compiled into libicudata: only a broken installation gets here.
            fatalError("ICU's spoof checker could not be opened (\(Self.errorName(status))); reinstall libicu")
        }
        checker = opened
    }

    deinit { cicu_spoof_close(checker) }

    /// Nil when `text` meets the highly restrictive level and uses one number system. A failure of
    /// ICU itself (it has no cause on valid UTF-8) counts as mixed scripts: refusing is the safe side.
    func restrictionFinding(_ text: String) -> Finding? {
        var status: Int32 = 0
        var copy = text
        let result = copy.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                cicu_spoof_check(checker, chars.baseAddress, Int32(chars.count), &status)
            }
        }
        guard status <= 0 else { return .mixedScripts }
        if result & cicu_check_restriction_level != 0 { return .mixedScripts }
        if result & cicu_check_mixed_numbers != 0 { return .mixedNumbers }
        return nil
    }

    /// The confusable skeleton of UTS #39 §4: two strings look alike when their skeletons are equal
    /// (`ɑlice`, with a Latin alpha, and `alice` both give `alice`).
    func skeleton(_ text: String) -> String {
        var copy = text
        return copy.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { input in
                var capacity = max(64, input.count * 4)
                while true {
                    var status: Int32 = 0
                    var output = [CChar](repeating: 0, count: capacity)
                    let length = output.withUnsafeMutableBufferPointer { out in
                        cicu_spoof_skeleton(
                            checker,
                            input.baseAddress,
                            Int32(input.count),
                            out.baseAddress,
                            Int32(out.count),
                            &status
                        )
                    }
                    if status == cicu_status_buffer_overflow, Int(length) >= capacity {
                        capacity = Int(length) + 1
                        continue
                    }
                    guard status <= 0 else {
                        // Not reachable for valid UTF-8; the string itself is then the safest key.
                        return text
                    }
                    return String(decoding: output.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                }
            }
        }
    }

    /// The scripts a code point belongs to (Unicode's Script_Extensions), by name (`Latin`,
    /// `Cyrillic`); empty for code points used with every script (Common and Inherited).
    static func scripts(of scalar: Unicode.Scalar) -> [String] {
        var names = [UnsafePointer<CChar>?](repeating: nil, count: 32)
        let count = names.withUnsafeMutableBufferPointer {
            cicu_script_names(Int32(bitPattern: scalar.value), $0.baseAddress, Int32($0.count))
        }
        return names.prefix(Int(count)).compactMap { $0.map { String(cString: $0) } }
    }

    private static func errorName(_ status: Int32) -> String {
        cicu_error_name(status).map { String(cString: $0) } ?? "error \(status)"
    }
}
