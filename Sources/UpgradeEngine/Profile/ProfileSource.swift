/// Where an account's contact email or display name came from: an import (`accounts import`), or
/// the device, which forwarded what Apple's sheet gave it once. Neither is verified; what
/// identifies the account is its Apple link's `sub`, from the signed identity token.
public enum ProfileSource: String, Sendable, CaseIterable {
    case `import`
    case device
}
