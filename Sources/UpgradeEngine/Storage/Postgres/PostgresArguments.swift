/// Text-format parameters as C strings in one buffer, ready for libpq. NULL is a null pointer;
/// bytea is sent as `\x` and hex digits.
struct PostgresArguments {
    private var storage: [CChar] = []
    private var offsets: [Int?] = []

    init(_ arguments: [SQLValue]) throws(PostgresError) {
        offsets.reserveCapacity(arguments.count)
        for (index, argument) in arguments.enumerated() {
            switch argument {
            case .null:
                offsets.append(nil)
                continue
            case .integer(let value):
                offsets.append(storage.count)
                storage.append(contentsOf: String(value).utf8.lazy.map { CChar(bitPattern: $0) })
            case .text(let value):
                // A text-format value ends at its first NUL, which PostgreSQL text cannot hold anyway.
                guard !value.utf8.contains(0) else {
                    throw PostgresError(
                        .misuse,
                        "PostgreSQL cannot store argument \(index + 1): it is text with a NUL character"
                    )
                }
                offsets.append(storage.count)
                storage.append(contentsOf: value.utf8.lazy.map { CChar(bitPattern: $0) })
            case .blob(let bytes):
                offsets.append(storage.count)
                storage.reserveCapacity(storage.count + 2 + bytes.count * 2 + 1)
                storage.append(CChar(UInt8(ascii: "\\")))
                storage.append(CChar(UInt8(ascii: "x")))
                for byte in bytes {
                    storage.append(Self.hexDigits[Int(byte >> 4)])
                    storage.append(Self.hexDigits[Int(byte & 0x0f)])
                }
            }
            storage.append(0)
        }
    }

    func withPointers<T>(_ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        storage.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress
            return body(
                offsets.map { offset -> UnsafePointer<CChar>? in
                    guard let offset, let base else { return nil }
                    return base + offset
                }
            )
        }
    }

    private static let hexDigits: [CChar] = Array("0123456789abcdef".utf8).map { CChar(bitPattern: $0) }
}
