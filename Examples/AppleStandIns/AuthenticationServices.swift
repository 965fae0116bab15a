// A declaration-only stand-in for the part of Apple's AuthenticationServices that Examples/ uses: the Account
// Authentication Modification extension point, the app side that starts it, and the Sign in with Apple credential
// the extension receives. Scripts/typecheck-ios compiles it as a module named AuthenticationServices (after the
// UIKit stand-in beside it) so that the extension and the app type-check on Linux; it stands in for a framework,
// hence many types in one file.
//
// Each declaration copies the iOS Swift declaration on the developer.apple.com page in the comment above it:
// names, argument labels, types, optionality, `async throws`, `@Sendable`, `@MainActor`, error codes. Nothing here
// runs: a body is `fatalError()` at most. Built with library evolution, so an exhaustive `switch` over an error
// code needs `@unknown default`, as over Apple's. Where Linux cannot say what the SDK says, the comment says how
// this differs; none of the differences lets through a call that Apple's declarations refuse.

@_exported import Foundation
import UIKit

// MARK: - Credentials

// https://developer.apple.com/documentation/authenticationservices/ascredentialserviceidentifier
// (The page lists Sendable among its conformances, as do those of the two credentials below.)
open class ASCredentialServiceIdentifier: NSObject, @unchecked Sendable {
    // https://developer.apple.com/documentation/authenticationservices/ascredentialserviceidentifier/init(identifier:type:)
    public init(identifier: String, type: ASCredentialServiceIdentifier.IdentifierType) { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/ascredentialserviceidentifier/identifier
    open var identifier: String { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/ascredentialserviceidentifier/type
    open var type: ASCredentialServiceIdentifier.IdentifierType { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/ascredentialserviceidentifier/identifiertype
    public enum IdentifierType: Int, Sendable {
        // https://developer.apple.com/documentation/authenticationservices/ascredentialserviceidentifier/identifiertype/domain
        case domain = 0
        // https://developer.apple.com/documentation/authenticationservices/ascredentialserviceidentifier/identifiertype/url
        case URL = 1
    }
}

// https://developer.apple.com/documentation/authenticationservices/aspasswordcredential
open class ASPasswordCredential: NSObject, @unchecked Sendable {
    // https://developer.apple.com/documentation/authenticationservices/aspasswordcredential/init(user:password:)
    public init(user: String, password: String) { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/aspasswordcredential/user
    open var user: String { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/aspasswordcredential/password
    open var password: String { fatalError() }
}

// https://developer.apple.com/documentation/authenticationservices/asauthorization
open class ASAuthorization: NSObject {
    // https://developer.apple.com/documentation/authenticationservices/asauthorization/scope
    public struct Scope: Hashable, RawRepresentable, Sendable {
        public var rawValue: String { fatalError() }
        public init(rawValue: String) { fatalError() }

        // https://developer.apple.com/documentation/authenticationservices/asauthorization/scope/fullname
        public static var fullName: ASAuthorization.Scope { fatalError() }

        // https://developer.apple.com/documentation/authenticationservices/asauthorization/scope/email
        public static var email: ASAuthorization.Scope { fatalError() }
    }
}

// https://developer.apple.com/documentation/authenticationservices/asauthorizationappleidcredential
// Apple gives `email` and `fullName` only on the first authorization of the app by this Apple Account.
open class ASAuthorizationAppleIDCredential: NSObject, @unchecked Sendable {
    // https://developer.apple.com/documentation/authenticationservices/asauthorizationappleidcredential/user
    open var user: String { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asauthorizationappleidcredential/state
    open var state: String? { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asauthorizationappleidcredential/identitytoken
    open var identityToken: Data? { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asauthorizationappleidcredential/authorizationcode
    open var authorizationCode: Data? { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asauthorizationappleidcredential/authorizedscopes
    open var authorizedScopes: [ASAuthorization.Scope] { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asauthorizationappleidcredential/email
    open var email: String? { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asauthorizationappleidcredential/fullname
    open var fullName: PersonNameComponents? { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asauthorizationappleidcredential/realuserstatus
    open var realUserStatus: ASUserDetectionStatus { fatalError() }
}

// https://developer.apple.com/documentation/authenticationservices/asuserdetectionstatus
public enum ASUserDetectionStatus: Int, Sendable {
    // https://developer.apple.com/documentation/authenticationservices/asuserdetectionstatus/unsupported
    case unsupported = 0
    // https://developer.apple.com/documentation/authenticationservices/asuserdetectionstatus/unknown
    case unknown = 1
    // https://developer.apple.com/documentation/authenticationservices/asuserdetectionstatus/likelyreal
    case likelyReal = 2
}

// MARK: - Errors

// https://developer.apple.com/documentation/authenticationservices/asextensionerrordomain
// (Apple declares a `let`; a computed property reads the same.)
public var ASExtensionErrorDomain: String { fatalError() }

// https://developer.apple.com/documentation/authenticationservices/asextensionlocalizedfailurereasonerrorkey
public var ASExtensionLocalizedFailureReasonErrorKey: String { fatalError() }

// https://developer.apple.com/documentation/authenticationservices/asextensionerror
public struct ASExtensionError: CustomNSError, Hashable, Error {
    // The initializer every imported error struct has (`_BridgedStoredNSError`).
    public init(_ code: ASExtensionError.Code, userInfo: [String: Any] = [:]) { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asextensionerror/errordomain
    public static var errorDomain: String { fatalError() }

    public var code: ASExtensionError.Code { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asextensionerror/code
    public enum Code: Int, Sendable {
        // https://developer.apple.com/documentation/authenticationservices/asextensionerror/code/failed
        case failed = 0
        // https://developer.apple.com/documentation/authenticationservices/asextensionerror/code/usercanceled
        case userCanceled = 1
        // https://developer.apple.com/documentation/authenticationservices/asextensionerror/code/userinteractionrequired
        case userInteractionRequired = 100
        // https://developer.apple.com/documentation/authenticationservices/asextensionerror/code/credentialidentitynotfound
        case credentialIdentityNotFound = 101
        // https://developer.apple.com/documentation/authenticationservices/asextensionerror/code/matchedexcludedcredential
        case matchedExcludedCredential = 102
    }

    // https://developer.apple.com/documentation/authenticationservices/asextensionerror/failed
    public static var failed: ASExtensionError.Code { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asextensionerror/usercanceled
    public static var userCanceled: ASExtensionError.Code { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asextensionerror/userinteractionrequired
    public static var userInteractionRequired: ASExtensionError.Code { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asextensionerror/credentialidentitynotfound
    public static var credentialIdentityNotFound: ASExtensionError.Code { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asextensionerror/matchedexcludedcredential
    public static var matchedExcludedCredential: ASExtensionError.Code { fatalError() }
}

// https://developer.apple.com/documentation/authenticationservices/asauthorizationerrordomain
public var ASAuthorizationErrorDomain: String { fatalError() }

// https://developer.apple.com/documentation/authenticationservices/asauthorizationerror-swift.struct
public struct ASAuthorizationError: CustomNSError, Hashable, Error {
    // The initializer every imported error struct has (`_BridgedStoredNSError`).
    public init(_ code: ASAuthorizationError.Code, userInfo: [String: Any] = [:]) { fatalError() }

    public static var errorDomain: String { fatalError() }

    public var code: ASAuthorizationError.Code { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asauthorizationerror-swift.struct/code
    public enum Code: Int, Sendable {
        // https://developer.apple.com/documentation/authenticationservices/asauthorizationerror-swift.struct/code/unknown
        case unknown = 1000
        // https://developer.apple.com/documentation/authenticationservices/asauthorizationerror-swift.struct/code/canceled
        case canceled = 1001
        // https://developer.apple.com/documentation/authenticationservices/asauthorizationerror-swift.struct/code/invalidresponse
        case invalidResponse = 1002
        // https://developer.apple.com/documentation/authenticationservices/asauthorizationerror-swift.struct/code/nothandled
        case notHandled = 1003
        // https://developer.apple.com/documentation/authenticationservices/asauthorizationerror-swift.struct/code/failed
        case failed = 1004
        // https://developer.apple.com/documentation/authenticationservices/asauthorizationerror-swift.struct/code/notinteractive
        case notInteractive = 1005
    }

    // https://developer.apple.com/documentation/authenticationservices/asauthorizationerror-swift.struct/canceled
    public static var canceled: ASAuthorizationError.Code { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asauthorizationerror-swift.struct/failed
    public static var failed: ASAuthorizationError.Code { fatalError() }
}

// MARK: - The extension

// https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationextensioncontext
// Apple's class inherits from NSExtensionContext, which Foundation on Linux does not have; nothing in Examples/
// uses what it inherits.
open class ASAccountAuthenticationModificationExtensionContext: NSObject {
    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationextensioncontext/getsigninwithappleupgradeauthorization(state:nonce:completionhandler:)
    open func getSignInWithAppleUpgradeAuthorization(
        state: String?,
        nonce: String?,
        completionHandler: @escaping @Sendable (ASAuthorizationAppleIDCredential?, (any Error)?) -> Void
    ) { fatalError() }

    // The same page: the method's `async` form.
    open func requestSignInWithAppleUpgradeAuthorization(
        state: String?,
        nonce: String?
    ) async throws -> ASAuthorizationAppleIDCredential { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationextensioncontext/completeupgradetosigninwithapple(userinfo:)
    open func completeUpgradeToSignInWithApple(userInfo: [AnyHashable: Any]? = nil) { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationextensioncontext/completechangepasswordrequest(updatedcredential:userinfo:)
    open func completeChangePasswordRequest(
        updatedCredential: ASPasswordCredential,
        userInfo: [AnyHashable: Any]? = nil
    ) { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationextensioncontext/cancelrequest(witherror:)
    open func cancelRequest(withError error: any Error) { fatalError() }
}

// https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationviewcontroller
// On iOS its superclass is UIViewController, hence `@MainActor`.
@MainActor open class ASAccountAuthenticationModificationViewController: UIViewController {
    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationviewcontroller/extensioncontext
    open var extensionContext: ASAccountAuthenticationModificationExtensionContext { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationviewcontroller/convertaccounttosigninwithapplewithoutuserinteraction(for:existingcredential:userinfo:)
    open func convertAccountToSignInWithAppleWithoutUserInteraction(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        userInfo: [AnyHashable: Any]? = nil
    ) { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationviewcontroller/prepareinterfacetoconvertaccounttosigninwithapple(for:existingcredential:userinfo:)
    open func prepareInterfaceToConvertAccountToSignInWithApple(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        userInfo: [AnyHashable: Any]? = nil
    ) { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationviewcontroller/changepasswordwithoutuserinteraction(for:existingcredential:newpassword:userinfo:)
    open func changePasswordWithoutUserInteraction(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        newPassword: String,
        userInfo: [AnyHashable: Any]? = nil
    ) { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationviewcontroller/prepareinterfacetochangepassword(for:existingcredential:newpassword:userinfo:)
    open func prepareInterfaceToChangePassword(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        newPassword: String,
        userInfo: [AnyHashable: Any]? = nil
    ) { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationviewcontroller/cancelrequest()
    open func cancelRequest() { fatalError() }
}

// MARK: - The app side

// https://developer.apple.com/documentation/authenticationservices/aspresentationanchor
// (The page shows the macOS form, NSWindow; on iOS it is UIWindow.)
public typealias ASPresentationAnchor = UIWindow

// https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationrequest
open class ASAccountAuthenticationModificationRequest: NSObject {}

// https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationreplacepasswordwithsigninwithapplerequest
open class ASAccountAuthenticationModificationReplacePasswordWithSignInWithAppleRequest:
    ASAccountAuthenticationModificationRequest
{
    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationreplacepasswordwithsigninwithapplerequest/init(user:serviceidentifier:userinfo:)
    public init(user: String, serviceIdentifier: ASCredentialServiceIdentifier, userInfo: [AnyHashable: Any]? = nil) {
        fatalError()
    }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationreplacepasswordwithsigninwithapplerequest/user
    open var user: String { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationreplacepasswordwithsigninwithapplerequest/serviceidentifier
    open var serviceIdentifier: ASCredentialServiceIdentifier { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationreplacepasswordwithsigninwithapplerequest/userinfo
    open var userInfo: [AnyHashable: Any]? { fatalError() }
}

// https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationupgradepasswordtostrongpasswordrequest
open class ASAccountAuthenticationModificationUpgradePasswordToStrongPasswordRequest:
    ASAccountAuthenticationModificationRequest
{
    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationupgradepasswordtostrongpasswordrequest/init(user:serviceidentifier:userinfo:)
    public init(user: String, serviceIdentifier: ASCredentialServiceIdentifier, userInfo: [AnyHashable: Any]? = nil) {
        fatalError()
    }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationupgradepasswordtostrongpasswordrequest/user
    open var user: String { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationupgradepasswordtostrongpasswordrequest/serviceidentifier
    open var serviceIdentifier: ASCredentialServiceIdentifier { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationupgradepasswordtostrongpasswordrequest/userinfo
    open var userInfo: [AnyHashable: Any]? { fatalError() }
}

// https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationcontrollerdelegate
// Both methods are `optional` in Apple's protocol. Swift on Linux has no optional requirements, and a default
// implementation here would let a misspelled method compile and never be called, so both are required: an app
// that implements them (the example does) type-checks the same against either declaration.
public protocol ASAccountAuthenticationModificationControllerDelegate: NSObjectProtocol {
    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationcontrollerdelegate/accountauthenticationmodificationcontroller(_:didsuccessfullycomplete:userinfo:)
    func accountAuthenticationModificationController(
        _ controller: ASAccountAuthenticationModificationController,
        didSuccessfullyComplete request: ASAccountAuthenticationModificationRequest,
        userInfo: [AnyHashable: Any]?
    )

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationcontrollerdelegate/accountauthenticationmodificationcontroller(_:didfail:error:)
    func accountAuthenticationModificationController(
        _ controller: ASAccountAuthenticationModificationController,
        didFail request: ASAccountAuthenticationModificationRequest,
        error: any Error
    )
}

// https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationcontrollerpresentationcontextproviding
@MainActor public protocol ASAccountAuthenticationModificationControllerPresentationContextProviding: NSObjectProtocol {
    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationcontrollerpresentationcontextproviding/presentationanchor(for:)
    func presentationAnchor(for controller: ASAccountAuthenticationModificationController) -> ASPresentationAnchor
}

// https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationcontroller
open class ASAccountAuthenticationModificationController: NSObject {
    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationcontroller/delegate
    public weak var delegate: (any ASAccountAuthenticationModificationControllerDelegate)?

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationcontroller/presentationcontextprovider
    public weak var presentationContextProvider:
        (any ASAccountAuthenticationModificationControllerPresentationContextProviding)?

    public override init() { fatalError() }

    // https://developer.apple.com/documentation/authenticationservices/asaccountauthenticationmodificationcontroller/perform(_:)
    open func perform(_ request: ASAccountAuthenticationModificationRequest) { fatalError() }
}
