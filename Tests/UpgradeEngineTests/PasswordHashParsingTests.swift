import Testing

@testable import UpgradeEngine

/// Strict parsing and the bounds checks that run before any key derivation. A refused hash must
/// come back with the right code at once: these tests would hang for hours (bcrypt cost 31) or
/// exhaust memory (argon2 m = 4 GiB) if a bound were checked after the work started.
@Suite("Password hash parsing and bounds")
struct PasswordHashParsingTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let label: String
        let hash: String

        init(_ label: String, _ hash: String) {
            self.label = label
            self.hash = hash
        }

        var testDescription: String { label }
    }

    /// One well-formed, in-bounds hash per scheme; the tables below change one thing at a time.
    static let salt = "c2FsdHNhbHRzYWx0c2FsdA"
    static let digest32 = String(repeating: "A", count: 43)
    static let baseline: [Case] = [
        Case("bcrypt", "$2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("argon2id", "$argon2id$v=19$m=1024,t=1,p=1$\(salt)$\(digest32)"),
        Case("argon2i v1.0", "$argon2i$m=1024,t=1,p=1$\(salt)$\(digest32)"),
        Case("passlib scrypt", "$scrypt$ln=4,r=8,p=1$\(salt)$\(digest32)"),
        Case("$7$ scrypt", "$7$C6..../....SodiumChloride$kBGj9fHznVYFQMEn/qDCfrDevf9YDtcDdKvEqHJLV8D"),
        Case("Django PBKDF2", "pbkdf2_sha256$1000$saltsalt$\(digest32)="),
        Case("passlib PBKDF2", "$pbkdf2-sha256$1000$\(salt)$\(digest32)"),
        Case("sha512-crypt", "$6$rounds=1000$saltsalt$" + String(repeating: ".", count: 86)),
        Case("sha256-crypt", "$5$saltsalt$" + String(repeating: ".", count: 43)),
        Case("md5-crypt", "$1$saltsalt$" + String(repeating: ".", count: 22)),
        Case("yescrypt", "$y$j9T$saltsaltsaltsalt$" + String(repeating: ".", count: 43)),
        Case("LDAP {SSHA}", "{SSHA}W6ph5Mm5Pz8GgiULbPgzG37mj9hzYWx0"),
        Case("LDAP {SSHA512}", "{SSHA512}" + String(repeating: "A", count: 84) + "c2FsdHNhbHQ="),
        Case("LDAP {CRYPT}", "{CRYPT}$2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("WordPress phpass", "$P$Bsaltsalt" + String(repeating: ".", count: 22)),
        Case("phpBB phpass", "$H$9saltsalt" + String(repeating: ".", count: 22)),
        Case("Drupal 7", "$S$Dsaltsalt" + String(repeating: "z", count: 43)),
        Case("Django bcrypt_sha256", "bcrypt_sha256$$2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("Django argon2", "argon2$argon2id$v=19$m=1024,t=2,p=8$\(salt)$\(digest32)"),
        Case("Django argon2i", "argon2$argon2i$m=1024,t=2,p=2$\(salt)$\(digest32)"),
    ]

    static let malformed: [Case] = [
        Case("bcrypt too short", "$2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0W"),
        Case("bcrypt one-digit cost", "$2b$4$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("bcrypt foreign character", "$2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0W!"),
        Case("bcrypt non-canonical salt", "$2b$04$GV7oqmKVW/S97lcGqiz7cvIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("bcrypt non-canonical hash", "$2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wr"),
        Case("bcrypt trailing newline", "$2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq\n"),
        Case("bcrypt leading space", " $2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("argon2 without hash", "$argon2id$v=19$m=1024,t=1,p=1$\(salt)"),
        Case("argon2 parameters reordered", "$argon2id$v=19$t=1,m=1024,p=1$\(salt)$\(digest32)"),
        Case("argon2 leading zero", "$argon2id$v=19$m=01024,t=1,p=1$\(salt)$\(digest32)"),
        Case("argon2 padded salt", "$argon2id$v=19$m=1024,t=1,p=1$\(salt)==$\(digest32)"),
        Case("argon2 short salt", "$argon2id$v=19$m=1024,t=1,p=1$c2FsdA$\(digest32)"),
        Case("argon2 url-safe hash", "$argon2id$v=19$m=1024,t=1,p=1$\(salt)$\(digest32.dropLast())-"),
        Case("argon2 non-canonical hash", "$argon2id$v=19$m=1024,t=1,p=1$\(salt)$\(digest32.dropLast())B"),
        Case("argon2 version not a number", "$argon2id$v=x$m=1024,t=1,p=1$\(salt)$\(digest32)"),
        Case("argon2 extra field", "$argon2id$v=19$m=1024,t=1,p=1$\(salt)$\(digest32)$"),
        Case("scrypt missing p", "$scrypt$ln=4,r=8$\(salt)$\(digest32)"),
        Case("scrypt bad salt", "$scrypt$ln=4,r=8,p=1$sa*t$\(digest32)"),
        Case("scrypt short hash", "$scrypt$ln=4,r=8,p=1$\(salt)$AAAA"),
        Case("scrypt N = 1", "$scrypt$ln=0,r=8,p=1$\(salt)$\(digest32)"),
        Case("scrypt N ≥ 2^(16·r)", "$scrypt$ln=16,r=1,p=1$\(salt)$\(digest32)"),
        Case("$7$ parameters cut short", "$7$C6..../...$kBGj9fHznVYFQMEn/qDCfrDevf9YDtcDdKvEqHJLV8D"),
        Case(
            "$7$ foreign parameter character",
            "$7$C6..-./....SodiumChloride$kBGj9fHznVYFQMEn/qDCfrDevf9YDtcDdKvEqHJLV8D"
        ),
        Case("$7$ hash too short", "$7$C6..../....SodiumChloride$kBGj9fHznVYFQMEn/qDCfrDevf9YDtcDdKvEqHJLV8"),
        Case("$7$ non-canonical hash", "$7$C6..../....SodiumChloride$kBGj9fHznVYFQMEn/qDCfrDevf9YDtcDdKvEqHJLVzz"),
        Case("$7$ salt with '$'", "$7$C6..../....Sodium$Chloride$kBGj9fHznVYFQMEn/qDCfrDevf9YDtcDdKvEqHJLV8D"),
        Case("Django PBKDF2 empty hash", "pbkdf2_sha256$1000$saltsalt$"),
        Case("Django PBKDF2 SHA-1-sized hash", "pbkdf2_sha256$1000$saltsalt$AAAAAAAAAAAAAAAAAAAAAAAAAAA="),
        Case("Django PBKDF2 unpadded hash", "pbkdf2_sha256$1000$saltsalt$\(digest32)"),
        Case("Django PBKDF2 leading zero", "pbkdf2_sha256$01000$saltsalt$\(digest32)="),
        Case("Django PBKDF2 exponent", "pbkdf2_sha256$1e3$saltsalt$\(digest32)="),
        Case("Django PBKDF2 empty salt", "pbkdf2_sha256$1000$$\(digest32)="),
        Case("passlib PBKDF2 standard alphabet", "$pbkdf2-sha256$1000$c2Fsd+NhbHRzYWx0c2FsdA$\(digest32)"),
        Case("passlib PBKDF2 SHA-256-sized SHA-512", "$pbkdf2-sha512$1000$\(salt)$\(digest32)"),
        Case("passlib PBKDF2 missing salt", "$pbkdf2$1000$\(digest32)"),
        Case("sha512-crypt empty rounds", "$6$rounds=$saltsalt$" + String(repeating: ".", count: 86)),
        Case("sha512-crypt leading zero", "$6$rounds=01000$saltsalt$" + String(repeating: ".", count: 86)),
        Case("sha512-crypt 17-character salt", "$6$saltsaltsaltsalts$" + String(repeating: ".", count: 86)),
        Case("sha512-crypt short hash", "$6$saltsalt$" + String(repeating: ".", count: 85)),
        Case("sha512-crypt non-canonical hash", "$6$saltsalt$" + String(repeating: ".", count: 85) + "z"),
        Case("sha256-crypt foreign salt character", "$5$salt!alt$" + String(repeating: ".", count: 43)),
        Case("md5-crypt 9-character salt", "$1$saltsalts$" + String(repeating: ".", count: 22)),
        Case("md5-crypt short hash", "$1$saltsalt$" + String(repeating: ".", count: 21)),
        Case("yescrypt missing hash", "$y$j9T$saltsaltsaltsalt"),
        Case("yescrypt foreign parameter character", "$y$j9!$saltsaltsaltsalt$" + String(repeating: ".", count: 43)),
        Case("yescrypt truncated parameter", "$y$jz$saltsaltsaltsalt$" + String(repeating: ".", count: 43)),
        Case("yescrypt impossible salt length", "$y$j9T$saltsaltsaltsaltx$" + String(repeating: ".", count: 43)),
        Case("yescrypt short hash", "$y$j9T$saltsaltsaltsalt$" + String(repeating: ".", count: 42)),
        Case("{SSHA} without a salt", "{SSHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="),
        Case("{SSHA} unpadded", "{SSHA}W6ph5Mm5Pz8GgiULbPgzG37mj9hzYWx0cw"),
        Case("{SSHA256} SHA-1-sized", "{SSHA256}W6ph5Mm5Pz8GgiULbPgzG37mj9hzYWx0"),
        Case("{SSHA} salt over 64 bytes", "{SSHA}" + String(repeating: "A", count: 116)),
        Case("{CRYPT} with an argon2 hash", "{CRYPT}$argon2id$v=19$m=1024,t=1,p=1$\(salt)$\(digest32)"),
        Case("{CRYPT} with DES crypt", "{CRYPT}saHW9GdxihkGQ"),
        Case("{CRYPT} with a malformed bcrypt", "{CRYPT}$2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0W"),
        Case("phpass too short", "$P$Bsaltsalt" + String(repeating: ".", count: 21)),
        Case("phpass too long", "$P$Bsaltsalt" + String(repeating: ".", count: 23)),
        Case("phpass foreign cost character", "$P$-saltsalt" + String(repeating: ".", count: 22)),
        Case("phpass foreign salt character", "$H$9salt$alt" + String(repeating: ".", count: 22)),
        Case("phpass non-canonical hash", "$P$Bsaltsalt" + String(repeating: ".", count: 21) + "z"),
        Case("Drupal 7 untruncated", "$S$Dsaltsalt" + String(repeating: ".", count: 86)),
        Case("Drupal 7 foreign hash character", "$S$Dsaltsalt" + String(repeating: ".", count: 42) + "+"),
        Case("bcrypt_sha256 without a bcrypt hash", "bcrypt_sha256$pbkdf2_sha256$1000$saltsalt$\(digest32)="),
        Case(
            "bcrypt_sha256 with a short bcrypt",
            "bcrypt_sha256$$2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0W"
        ),
        Case("Django argon2 padded salt", "argon2$argon2id$v=19$m=1024,t=2,p=8$\(salt)==$\(digest32)"),
        Case("Django argon2 without hash", "argon2$argon2id$v=19$m=1024,t=2,p=8$\(salt)"),
        Case("over the length limit", "$pbkdf2-sha256$1000$\(String(repeating: "A", count: 600))$\(digest32)"),
    ]

    static let outOfBounds: [Case] = [
        Case("bcrypt cost 31", "$2b$31$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("bcrypt cost 17", "$2a$17$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("bcrypt cost 3", "$2y$03$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("argon2 4 GiB", "$argon2id$v=19$m=4194304,t=1,p=1$\(salt)$\(digest32)"),
        Case("argon2 257 MiB", "$argon2i$v=19$m=263168,t=1,p=1$\(salt)$\(digest32)"),
        Case("argon2 t=11", "$argon2id$v=19$m=1024,t=11,p=1$\(salt)$\(digest32)"),
        Case("argon2 t=0", "$argon2id$v=19$m=1024,t=0,p=1$\(salt)$\(digest32)"),
        Case("argon2 p=17", "$argon2id$v=19$m=1024,t=1,p=17$\(salt)$\(digest32)"),
        Case("argon2 under 8 KiB per lane", "$argon2id$v=19$m=8,t=1,p=2$\(salt)$\(digest32)"),
        Case("argon2 m beyond 64 bits", "$argon2id$v=19$m=99999999999999999999999,t=1,p=1$\(salt)$\(digest32)"),
        Case("scrypt ln=30", "$scrypt$ln=30,r=8,p=1$\(salt)$\(digest32)"),
        Case("scrypt 1 GiB", "$scrypt$ln=17,r=64,p=1$\(salt)$\(digest32)"),
        Case("scrypt huge r", "$scrypt$ln=20,r=9223372036854775807,p=1$\(salt)$\(digest32)"),
        Case("scrypt p=5", "$scrypt$ln=4,r=8,p=5$\(salt)$\(digest32)"),
        Case("$7$ N=2^30", "$7$S6..../....SodiumChloride$kBGj9fHznVYFQMEn/qDCfrDevf9YDtcDdKvEqHJLV8D"),
        Case("$7$ r=2^30-1", "$7$C6zzzzz/....SodiumChloride$kBGj9fHznVYFQMEn/qDCfrDevf9YDtcDdKvEqHJLV8D"),
        Case("Django PBKDF2 10^9 iterations", "pbkdf2_sha256$1000000000$saltsalt$\(digest32)="),
        Case("Django PBKDF2 999 iterations", "pbkdf2_sha1$999$saltsalt$AAAAAAAAAAAAAAAAAAAAAAAAAAA="),
        Case("passlib PBKDF2 10^22 iterations", "$pbkdf2-sha256$10000000000000000000000$\(salt)$\(digest32)"),
        Case("sha512-crypt 999999999 rounds", "$6$rounds=999999999$saltsalt$" + String(repeating: ".", count: 86)),
        Case("{CRYPT} bcrypt cost 31", "{CRYPT}$2b$31$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("sha256-crypt 999 rounds", "$5$rounds=999$saltsalt$" + String(repeating: ".", count: 43)),
        Case("yescrypt 1 GiB", "$y$jFT$saltsaltsaltsalt$" + String(repeating: ".", count: 43)),
        Case("yescrypt p=5", "$y$j9T.1$saltsaltsaltsalt$" + String(repeating: ".", count: 43)),
        Case("yescrypt t=5", "$y$j9T/2$saltsaltsaltsalt$" + String(repeating: ".", count: 43)),
        Case("phpass cost 30", "$P$Ssaltsalt" + String(repeating: ".", count: 22)),
        Case("phpass cost 6", "$H$4saltsalt" + String(repeating: ".", count: 22)),
        Case("phpass cost 63", "$P$zsaltsalt" + String(repeating: ".", count: 22)),
        Case("Drupal 7 cost 20", "$S$Isaltsalt" + String(repeating: "z", count: 43)),
        Case("bcrypt_sha256 cost 31", "bcrypt_sha256$$2b$31$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("Django argon2 4 GiB", "argon2$argon2id$v=19$m=4194304,t=2,p=8$\(salt)$\(digest32)"),
        Case("Django argon2 p=17", "argon2$argon2id$v=19$m=102400,t=2,p=17$\(salt)$\(digest32)"),
    ]

    static let unknown: [Case] = [
        Case("empty", ""),
        Case("plain text", "hunter2"),
        Case("LDAP unsalted SHA", "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="),
        Case("Django MD5", "md5$saltsalt$5f4dcc3b5aa765d61d8327deb882cf99"),
        Case("unknown crypt prefix", "$3$$8846f7eaee8fb117ad06bdd830b7586c"),
        Case("bare prefix of a known one", "$2"),
        Case("hex digest", "5f4dcc3b5aa765d61d8327deb882cf99"),
        Case("long text over the length limit", String(repeating: "plaintext ", count: 1000)),
    ]

    static let unsupported: [Case] = [
        Case("bcrypt $2x$", "$2x$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"),
        Case("argon2d", "$argon2d$v=19$m=1024,t=1,p=1$\(salt)$\(digest32)"),
        Case("argon2 version 20", "$argon2id$v=20$m=1024,t=1,p=1$\(salt)$\(digest32)"),
        Case("argon2 keyid", "$argon2id$v=19$m=1024,t=1,p=1,keyid=abc$\(salt)$\(digest32)"),
        Case("yescrypt ROM", "$y$j9T5/$saltsaltsaltsalt$" + String(repeating: ".", count: 43)),
        Case("Django argon2d", "argon2$argon2d$v=19$m=1024,t=1,p=1$\(salt)$\(digest32)"),
        Case("Django argon2 version 20", "argon2$argon2id$v=20$m=1024,t=1,p=1$\(salt)$\(digest32)"),
    ]

    let verifier = PasswordVerifier()

    @Test("the baseline hashes parse, so each table entry differs by the one thing it names", arguments: baseline)
    func baselineParses(_ sample: Case) throws {
        _ = try verifier.inspect(sample.hash)
        #expect(try !verifier.verify(password: "password", encodedHash: sample.hash))
    }

    @Test("malformed hashes are refused as malformed", arguments: malformed)
    func malformedIsRefused(_ sample: Case) {
        expectRefusal(sample, .malformed)
    }

    @Test("hashes whose cost lies outside the limits are refused before any work", arguments: outOfBounds)
    func outOfBoundsIsRefused(_ sample: Case) {
        expectRefusal(sample, .parameterOutOfBounds)
    }

    @Test("values in no supported format are refused as unknown", arguments: unknown)
    func unknownIsRefused(_ sample: Case) {
        expectRefusal(sample, .unknownFormat)
    }

    @Test("recognised but deliberately unsupported variants say so", arguments: unsupported)
    func unsupportedIsRefused(_ sample: Case) {
        expectRefusal(sample, .unsupported)
    }

    /// Both entry points refuse, with the code expected, and the message quotes neither the password
    /// nor any salt or digest from the stored value.
    private func expectRefusal(_ sample: Case, _ code: PasswordHashError.Code) {
        let password = "Tr0ub4dor&3-not-in-any-message"
        let verifyError = #expect(throws: PasswordHashError.self) {
            try verifier.verify(password: password, encodedHash: sample.hash)
        }
        let inspectError = #expect(throws: PasswordHashError.self) { try verifier.inspect(sample.hash) }
        #expect(verifyError?.code == code)
        #expect(inspectError?.code == code)
        guard let message = verifyError?.message else { return }
        #expect(!message.contains(password))
        #expect(!message.isEmpty)
        // Every field but the scheme identifier, which messages name on purpose.
        let fields = sample.hash.split(separator: "$", omittingEmptySubsequences: false).dropFirst(2)
        let secretLooking = fields.filter { $0.count >= 8 && !$0.contains("=") }
        for field in secretLooking where field.count >= 12 || code == .unknownFormat {
            #expect(!message.contains(field), "message quotes a field of the stored value")
        }
        if code == .unknownFormat && sample.hash.count >= 8 {
            #expect(!message.contains(sample.hash))
        }
    }

    @Test("inspection describes the cost in words")
    func costDescriptions() throws {
        let expected: [(String, PasswordHashFormat, String)] = [
            (Self.baseline[0].hash, .bcrypt, "cost 4 (2^4 iterations)"),
            (Self.baseline[1].hash, .argon2id, "m=1024 KiB, t=1, p=1"),
            (Self.baseline[2].hash, .argon2i, "m=1024 KiB, t=1, p=1 (version 1.0)"),
            (Self.baseline[3].hash, .scrypt, "N=2^4, r=8, p=1 (16 KiB)"),
            (Self.baseline[4].hash, .scrypt, "N=2^14, r=8, p=1 (16 MiB)"),
            (Self.baseline[5].hash, .pbkdf2SHA256, "1000 iterations of HMAC-SHA256"),
            (Self.baseline[6].hash, .pbkdf2SHA256, "1000 iterations of HMAC-SHA256"),
            (Self.baseline[7].hash, .sha512Crypt, "1000 rounds"),
            (Self.baseline[8].hash, .sha256Crypt, "5000 rounds (implicit default)"),
            (Self.baseline[9].hash, .md5Crypt, "1000 rounds (fixed)"),
            (Self.baseline[10].hash, .yescrypt, "N=2^12, r=32, p=1, t=0 (16 MiB)"),
            (Self.baseline[14].hash, .phpass, "cost 13 (2^13 iterations of MD5)"),
            (Self.baseline[15].hash, .phpass, "cost 11 (2^11 iterations of MD5)"),
            (Self.baseline[16].hash, .drupal7, "cost 15 (2^15 iterations of SHA-512)"),
            (Self.baseline[17].hash, .bcryptSHA256, "cost 4 (2^4 iterations)"),
            (Self.baseline[18].hash, .argon2id, "m=1024 KiB, t=2, p=8"),
            (Self.baseline[19].hash, .argon2i, "m=1024 KiB, t=2, p=2 (version 1.0)"),
        ]
        for (position, (hash, format, cost)) in expected.enumerated() {
            let inspection = try verifier.inspect(hash)
            #expect(inspection.scheme == String(hash.prefix(inspection.scheme.count)), "baseline \(position)")
            #expect(inspection.format == format, "baseline \(position)")
            #expect(inspection.costDescription == cost, "baseline \(position)")
        }
    }

    @Test("limits are configurable in both directions")
    func customLimits() throws {
        var strict = PasswordHashLimits()
        strict.bcryptCost = 10...12
        strict.maxPasswordBytes = 8
        let strictVerifier = PasswordVerifier(limits: strict)
        let error = #expect(throws: PasswordHashError.self) { try strictVerifier.inspect(Self.baseline[0].hash) }
        #expect(error?.code == .parameterOutOfBounds)
        #expect(error?.message.contains("bcryptCost") == true, "the message names the limit to change")
        let tooLong = #expect(throws: PasswordHashError.self) {
            try strictVerifier.verify(password: "123456789", encodedHash: Self.baseline[1].hash)
        }
        #expect(tooLong?.code == .invalidPassword)

        var lenient = PasswordHashLimits()
        lenient.bcryptCost = 4...31
        #expect(
            try PasswordVerifier(limits: lenient).inspect(Self.outOfBounds[0].hash).costDescription.hasPrefix("cost 31")
        )
    }

    @Test("the base64 dialects decode strictly and round-trip")
    func base64Dialects() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 73 &+ 5) }
            for dialect in [PasswordHashBase64.Dialect.standardPadded, .standardUnpadded, .adapted] {
                let text = PasswordHashBase64.encode(bytes, dialect)
                #expect(PasswordHashBase64.decode(text.utf8, dialect) == bytes, "length \(length)")
            }
            #expect(PasswordHashBase64.decodeCrypt(PasswordHashBase64.encodeCrypt(bytes).utf8) == bytes)
        }
        #expect(PasswordHashBase64.encode([0xfb, 0xff], .standardPadded) == "+/8=")
        #expect(PasswordHashBase64.encode([0xfb, 0xff], .adapted) == "./8")
        #expect(PasswordHashBase64.decode("+/8".utf8, .adapted) == nil, "ab64 has no '+'")
        #expect(PasswordHashBase64.decode("+/8".utf8, .standardPadded) == nil, "padding required")
        #expect(PasswordHashBase64.decode("+/8==".utf8, .standardPadded) == nil, "too much padding")
        #expect(PasswordHashBase64.decode("+/9".utf8, .standardUnpadded) == nil, "non-canonical tail")
        #expect(PasswordHashBase64.decode("A".utf8, .standardUnpadded) == nil, "impossible length")
        // Little-endian: 0x020100 written six bits at a time, lowest first: 0, 4, 32, 0.
        #expect(PasswordHashBase64.encodeCrypt([0x00, 0x01, 0x02]) == ".2U.")
        #expect(PasswordHashBase64.decodeCrypt("/0".utf8) == [129])
        #expect(PasswordHashBase64.decodeCrypt("/2".utf8) == nil, "bits above the byte")
    }
}
