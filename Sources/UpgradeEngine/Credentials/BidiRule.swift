/// The Bidi Rule of RFC 5893 §2, the directionality rule of the username profile (RFC 8265 §3.3):
/// a name with right-to-left characters must read one way only, so that it cannot display like another.
///
/// Swift exposes no Bidi_Class, so `bidiClass` derives it from the general category and fixed ranges
/// of the right-to-left scripts. It is exact only for the code points the IdentifierClass allows (the
/// rule runs after that check); a test compares it with Unicode's data for every one of them.
enum BidiRule {
    enum BidiClass {
        case l, r, al, en, an, es, cs, et, on, bn, nsm
    }

    static func check(_ scalars: [Unicode.Scalar]) throws(UsernameError) {
        let classes = scalars.map(bidiClass)
        // The rule applies to strings with right-to-left characters only (RFC 5893 §1.4, "Bidi domain name").
        guard classes.contains(where: { $0 == .r || $0 == .al || $0 == .an }) else { return }
        guard let first = classes.first else { return }
        let rightToLeft: Bool
        switch first {
        case .l: rightToLeft = false
        case .r, .al: rightToLeft = true
        default: throw failure("it must start with a letter")
        }
        let allowed: Set<BidiClass> =
            rightToLeft
            ? [.r, .al, .an, .en, .es, .cs, .et, .on, .bn, .nsm] : [.l, .en, .es, .cs, .et, .on, .bn, .nsm]
        guard classes.allSatisfy(allowed.contains) else {
            throw failure(
                rightToLeft
                    ? "a right-to-left name cannot contain left-to-right letters"
                    : "a left-to-right name cannot contain right-to-left characters"
            )
        }
        let last = classes.last { $0 != .nsm }
        let endsWell = last.map { rightToLeft ? [.r, .al, .en, .an].contains($0) : [.l, .en].contains($0) } ?? false
        guard endsWell else {
            throw failure(
                rightToLeft
                    ? "a right-to-left name must end with a letter or a digit" : "it must end with a letter or digit"
            )
        }
        if rightToLeft && classes.contains(.en) && classes.contains(.an) {
            throw failure("European and Arabic-Indic digits cannot be mixed")
        }
    }

    private static func failure(_ reason: String) -> UsernameError {
        UsernameError(.bidiRule, "the username breaks the Bidi Rule of RFC 5893: \(reason)", rule: "bidi_rule")
    }

    static func bidiClass(_ scalar: Unicode.Scalar) -> BidiClass {
        let value = scalar.value
        if value < 0x80 {
            switch scalar {
            case "0"..."9": return .en
            case "+", "-": return .es
            case ",", ".", "/", ":": return .cs
            case "#", "$", "%": return .et
            case "a"..."z", "A"..."Z": return .l
            default: return .on
            }
        }
        switch value {
        case 0x200C, 0x200D:
            return .bn
        // Modifier letters and contextual punctuation that are neutral.
        case 0x00B7, 0x02B9...0x02BA, 0x02C6...0x02CF, 0x02EC, 0x0375, 0x2E2F, 0x30FB, 0xA67F, 0xA717...0xA71F, 0xA788:
            return .on
        // Non-spacing marks that are nevertheless left-to-right.
        case 0x0CBF, 0x0CC6, 0x11A07...0x11A08, 0x11C3F:
            return .l
        // Digits: most scripts' are L; these are not.
        case 0x0660...0x0669, 0x10D30...0x10D39, 0x10D40...0x10D49:
            return .an
        case 0x06F0...0x06F9:
            return .en
        case 0x07C0...0x07C9, 0x1E950...0x1E959:
            return .r
        default:
            break
        }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark: return .nsm
        default: break
        }
        switch value {
        // Hebrew, NKo, Samaritan, Mandaic, the right-to-left historic scripts, Mende Kikakui, Adlam.
        case 0x0590...0x05FF, 0x07C0...0x085F, 0xFB1D...0xFB4F, 0x10800...0x10CFF, 0x10D40...0x10EBF,
            0x10F00...0x10F2F, 0x10F70...0x10FFF, 0x1E800...0x1EC6F:
            return .r
        // Arabic, Syriac, Thaana and their extensions, Hanifi Rohingya, Sogdian.
        case 0x0600...0x07BF, 0x0860...0x08FF, 0xFB50...0xFDFF, 0xFE70...0xFEFF, 0x10D00...0x10D3F,
            0x10EC0...0x10EFF, 0x10F30...0x10F6F, 0x1EC70...0x1EFFF:
            return .al
        default:
            return .l
        }
    }
}
