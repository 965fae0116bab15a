import UpgradeEngine

/// The parameters of a form-encoded request to one of Apple's endpoints, already
/// percent-decoded by the HTTP layer. Apple answers a repeated parameter with `invalid_request`
/// (TN3107), so duplicates are an error here rather than first-or-last wins.
struct EmulatorForm {
    private var values: [String: String] = [:]

    init(_ pairs: [(name: String, value: String)]) throws(AppleEndpointError) {
        for (name, value) in pairs {
            guard values.updateValue(value, forKey: name) == nil else {
                throw AppleEndpointError(
                    code: .invalidRequest,
                    httpStatus: 400,
                    message: "parameter \(name) is repeated"
                )
            }
        }
    }

    func optional(_ name: String) -> String? {
        values[name]
    }

    /// A missing or empty required parameter is `invalid_request`.
    func required(_ name: String) throws(AppleEndpointError) -> String {
        guard let value = values[name], !value.isEmpty else {
            throw AppleEndpointError(code: .invalidRequest, httpStatus: 400, message: "parameter \(name) is missing")
        }
        return value
    }
}
