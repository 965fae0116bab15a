// A declaration-only stand-in for the part of Apple's UIKit that Examples/ uses, compiled as a module named
// UIKit by Scripts/typecheck-ios so that the extension and the app type-check on Linux. It stands in for a whole
// framework, hence many types in one file.
//
// Each declaration copies the Swift declaration on the developer.apple.com page in the comment above it: names,
// argument labels, types, optionality, `@MainActor`. Nothing here runs: a body is `fatalError()` at most. The
// module is built with library evolution, so an exhaustive `switch` over one of its enums needs
// `@unknown default`, as over Apple's. What Linux cannot express is left out and said so: `addTarget(_:action:for:)`
// needs an Objective-C selector (`#selector`, `@objc`), so the examples use `UIAction` and `addAction(_:for:)`.
// Add a symbol here, with its page, when an example starts using it.

@_exported import Foundation

// On Apple's platforms `import UIKit` brings URLSession with Foundation; on Linux it lives in FoundationNetworking.
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif

// MARK: - Responders, views and view controllers

// https://developer.apple.com/documentation/uikit/uiresponder
@MainActor open class UIResponder: NSObject {
    public override init() { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiresponder/becomefirstresponder()
    @discardableResult open func becomeFirstResponder() -> Bool { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiresponder/resignfirstresponder()
    @discardableResult open func resignFirstResponder() -> Bool { fatalError() }
}

// https://developer.apple.com/documentation/uikit/uiview
@MainActor open class UIView: UIResponder {
    // https://developer.apple.com/documentation/uikit/uiview/init(frame:)
    public init(frame: CGRect) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/init(coder:)
    public required init?(coder: NSCoder) { fatalError() }

    // NSObject's init(), which UIKit forwards to init(frame: .zero).
    public convenience override init() { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/backgroundcolor
    open var backgroundColor: UIColor? {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uiview/tintcolor
    open var tintColor: UIColor! {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uiview/ishidden
    open var isHidden: Bool {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uiview/alpha
    open var alpha: CGFloat {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uiview/isuserinteractionenabled
    open var isUserInteractionEnabled: Bool {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uiview/window
    open var window: UIWindow? { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/subviews
    open var subviews: [UIView] { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/addsubview(_:)
    open func addSubview(_ view: UIView) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/removefromsuperview()
    open func removeFromSuperview() { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/translatesautoresizingmaskintoconstraints
    open var translatesAutoresizingMaskIntoConstraints: Bool {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uiview/layoutmarginsguide
    open var layoutMarginsGuide: UILayoutGuide { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/safearealayoutguide
    open var safeAreaLayoutGuide: UILayoutGuide { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/leadinganchor
    open var leadingAnchor: NSLayoutXAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/trailinganchor
    open var trailingAnchor: NSLayoutXAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/centerxanchor
    open var centerXAnchor: NSLayoutXAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/topanchor
    open var topAnchor: NSLayoutYAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/bottomanchor
    open var bottomAnchor: NSLayoutYAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/centeryanchor
    open var centerYAnchor: NSLayoutYAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/widthanchor
    open var widthAnchor: NSLayoutDimension { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiview/heightanchor
    open var heightAnchor: NSLayoutDimension { fatalError() }
}

// https://developer.apple.com/documentation/uikit/uiwindow
@MainActor open class UIWindow: UIView {}

// https://developer.apple.com/documentation/uikit/uiviewcontroller
@MainActor open class UIViewController: UIResponder {
    // https://developer.apple.com/documentation/uikit/uiviewcontroller/init(nibname:bundle:)
    public init(nibName nibNameOrNil: String?, bundle nibBundleOrNil: Bundle?) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/init(coder:)
    public required init?(coder: NSCoder) { fatalError() }

    // NSObject's init(), which UIKit forwards to init(nibName: nil, bundle: nil).
    public convenience override init() { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/view
    open var view: UIView! {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/isviewloaded
    open var isViewLoaded: Bool { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/title
    open var title: String? {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/loadview()
    open func loadView() { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/viewdidload()
    open func viewDidLoad() { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/viewwillappear(_:)
    open func viewWillAppear(_ animated: Bool) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/viewdidappear(_:)
    open func viewDidAppear(_ animated: Bool) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/viewwilldisappear(_:)
    open func viewWillDisappear(_ animated: Bool) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/viewdiddisappear(_:)
    open func viewDidDisappear(_ animated: Bool) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/present(_:animated:completion:)
    open func present(
        _ viewControllerToPresent: UIViewController,
        animated flag: Bool,
        completion: (() -> Void)? = nil
    ) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiviewcontroller/dismiss(animated:completion:)
    open func dismiss(animated flag: Bool, completion: (() -> Void)? = nil) { fatalError() }
}

// MARK: - Auto Layout

// https://developer.apple.com/documentation/uikit/uilayoutguide
@MainActor open class UILayoutGuide: NSObject {
    // https://developer.apple.com/documentation/uikit/uilayoutguide/leadinganchor
    open var leadingAnchor: NSLayoutXAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uilayoutguide/trailinganchor
    open var trailingAnchor: NSLayoutXAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uilayoutguide/centerxanchor
    open var centerXAnchor: NSLayoutXAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uilayoutguide/topanchor
    open var topAnchor: NSLayoutYAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uilayoutguide/bottomanchor
    open var bottomAnchor: NSLayoutYAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uilayoutguide/centeryanchor
    open var centerYAnchor: NSLayoutYAxisAnchor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uilayoutguide/widthanchor
    open var widthAnchor: NSLayoutDimension { fatalError() }

    // https://developer.apple.com/documentation/uikit/uilayoutguide/heightanchor
    open var heightAnchor: NSLayoutDimension { fatalError() }
}

// https://developer.apple.com/documentation/uikit/nslayoutanchor
@MainActor open class NSLayoutAnchor<AnchorType: AnyObject>: NSObject {
    // https://developer.apple.com/documentation/uikit/nslayoutanchor/constraint(equalto:)
    open func constraint(equalTo anchor: NSLayoutAnchor<AnchorType>) -> NSLayoutConstraint { fatalError() }

    // https://developer.apple.com/documentation/uikit/nslayoutanchor/constraint(equalto:constant:)
    open func constraint(equalTo anchor: NSLayoutAnchor<AnchorType>, constant c: CGFloat) -> NSLayoutConstraint {
        fatalError()
    }

    // https://developer.apple.com/documentation/uikit/nslayoutanchor/constraint(greaterthanorequalto:)
    open func constraint(greaterThanOrEqualTo anchor: NSLayoutAnchor<AnchorType>) -> NSLayoutConstraint {
        fatalError()
    }

    // https://developer.apple.com/documentation/uikit/nslayoutanchor/constraint(greaterthanorequalto:constant:)
    open func constraint(
        greaterThanOrEqualTo anchor: NSLayoutAnchor<AnchorType>,
        constant c: CGFloat
    ) -> NSLayoutConstraint { fatalError() }

    // https://developer.apple.com/documentation/uikit/nslayoutanchor/constraint(lessthanorequalto:)
    open func constraint(lessThanOrEqualTo anchor: NSLayoutAnchor<AnchorType>) -> NSLayoutConstraint {
        fatalError()
    }

    // https://developer.apple.com/documentation/uikit/nslayoutanchor/constraint(lessthanorequalto:constant:)
    open func constraint(
        lessThanOrEqualTo anchor: NSLayoutAnchor<AnchorType>,
        constant c: CGFloat
    ) -> NSLayoutConstraint { fatalError() }
}

// https://developer.apple.com/documentation/uikit/nslayoutxaxisanchor
@MainActor open class NSLayoutXAxisAnchor: NSLayoutAnchor<NSLayoutXAxisAnchor> {}

// https://developer.apple.com/documentation/uikit/nslayoutyaxisanchor
@MainActor open class NSLayoutYAxisAnchor: NSLayoutAnchor<NSLayoutYAxisAnchor> {}

// https://developer.apple.com/documentation/uikit/nslayoutdimension
@MainActor open class NSLayoutDimension: NSLayoutAnchor<NSLayoutDimension> {
    // https://developer.apple.com/documentation/uikit/nslayoutdimension/constraint(equaltoconstant:)
    open func constraint(equalToConstant c: CGFloat) -> NSLayoutConstraint { fatalError() }

    // https://developer.apple.com/documentation/uikit/nslayoutdimension/constraint(greaterthanorequaltoconstant:)
    open func constraint(greaterThanOrEqualToConstant c: CGFloat) -> NSLayoutConstraint { fatalError() }

    // https://developer.apple.com/documentation/uikit/nslayoutdimension/constraint(lessthanorequaltoconstant:)
    open func constraint(lessThanOrEqualToConstant c: CGFloat) -> NSLayoutConstraint { fatalError() }

    // https://developer.apple.com/documentation/uikit/nslayoutdimension/constraint(equalto:multiplier:)
    open func constraint(equalTo anchor: NSLayoutDimension, multiplier m: CGFloat) -> NSLayoutConstraint {
        fatalError()
    }
}

// https://developer.apple.com/documentation/uikit/nslayoutconstraint
@MainActor open class NSLayoutConstraint: NSObject {
    // https://developer.apple.com/documentation/uikit/nslayoutconstraint/activate(_:)
    open class func activate(_ constraints: [NSLayoutConstraint]) { fatalError() }

    // https://developer.apple.com/documentation/uikit/nslayoutconstraint/deactivate(_:)
    open class func deactivate(_ constraints: [NSLayoutConstraint]) { fatalError() }

    // https://developer.apple.com/documentation/uikit/nslayoutconstraint/isactive
    open var isActive: Bool {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/nslayoutconstraint/constant
    open var constant: CGFloat {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/nslayoutconstraint/axis
    public enum Axis: Int, Sendable {
        // https://developer.apple.com/documentation/uikit/nslayoutconstraint/axis/horizontal
        case horizontal = 0
        // https://developer.apple.com/documentation/uikit/nslayoutconstraint/axis/vertical
        case vertical = 1
    }
}

// MARK: - Controls

// https://developer.apple.com/documentation/uikit/uicontrol
@MainActor open class UIControl: UIView {
    // https://developer.apple.com/documentation/uikit/uicontrol/isenabled
    open var isEnabled: Bool {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uicontrol/isselected
    open var isSelected: Bool {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uicontrol/addaction(_:for:)
    open func addAction(_ action: UIAction, for controlEvents: UIControl.Event) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uicontrol/removeaction(_:for:)
    open func removeAction(_ action: UIAction, for controlEvents: UIControl.Event) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uicontrol/event
    public struct Event: OptionSet, Sendable {
        public var rawValue: UInt { fatalError() }
        public init(rawValue: UInt) { fatalError() }

        // https://developer.apple.com/documentation/uikit/uicontrol/event/touchupinside
        public static var touchUpInside: UIControl.Event { fatalError() }

        // https://developer.apple.com/documentation/uikit/uicontrol/event/valuechanged
        public static var valueChanged: UIControl.Event { fatalError() }

        // https://developer.apple.com/documentation/uikit/uicontrol/event/primaryactiontriggered
        public static var primaryActionTriggered: UIControl.Event { fatalError() }

        // https://developer.apple.com/documentation/uikit/uicontrol/event/editingchanged
        public static var editingChanged: UIControl.Event { fatalError() }

        // https://developer.apple.com/documentation/uikit/uicontrol/event/editingdidendonexit
        public static var editingDidEndOnExit: UIControl.Event { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uicontrol/state-swift.struct
    public struct State: OptionSet, Sendable {
        public var rawValue: UInt { fatalError() }
        public init(rawValue: UInt) { fatalError() }

        // https://developer.apple.com/documentation/uikit/uicontrol/state-swift.struct/normal
        public static var normal: UIControl.State { fatalError() }

        // https://developer.apple.com/documentation/uikit/uicontrol/state-swift.struct/highlighted
        public static var highlighted: UIControl.State { fatalError() }

        // https://developer.apple.com/documentation/uikit/uicontrol/state-swift.struct/disabled
        public static var disabled: UIControl.State { fatalError() }

        // https://developer.apple.com/documentation/uikit/uicontrol/state-swift.struct/selected
        public static var selected: UIControl.State { fatalError() }
    }
}

// https://developer.apple.com/documentation/uikit/uibutton
@MainActor open class UIButton: UIControl {
    // https://developer.apple.com/documentation/uikit/uibutton/init(type:)
    public convenience init(type buttonType: UIButton.ButtonType) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uibutton/init(type:primaryaction:)
    public convenience init(type buttonType: UIButton.ButtonType = .system, primaryAction: UIAction?) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uibutton/settitle(_:for:)
    open func setTitle(_ title: String?, for state: UIControl.State) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uibutton/title(for:)
    open func title(for state: UIControl.State) -> String? { fatalError() }

    // https://developer.apple.com/documentation/uikit/uibutton/titlelabel
    open var titleLabel: UILabel? { fatalError() }

    // https://developer.apple.com/documentation/uikit/uibutton/buttontype-swift.enum
    public enum ButtonType: Int, Sendable {
        // https://developer.apple.com/documentation/uikit/uibutton/buttontype-swift.enum/custom
        case custom = 0
        // https://developer.apple.com/documentation/uikit/uibutton/buttontype-swift.enum/system
        case system = 1
        // https://developer.apple.com/documentation/uikit/uibutton/buttontype-swift.enum/detaildisclosure
        case detailDisclosure = 2
        // https://developer.apple.com/documentation/uikit/uibutton/buttontype-swift.enum/infolight
        case infoLight = 3
        // https://developer.apple.com/documentation/uikit/uibutton/buttontype-swift.enum/infodark
        case infoDark = 4
        // https://developer.apple.com/documentation/uikit/uibutton/buttontype-swift.enum/contactadd
        case contactAdd = 5
        // https://developer.apple.com/documentation/uikit/uibutton/buttontype-swift.enum/close
        case close = 7
    }
}

// https://developer.apple.com/documentation/uikit/uilabel
@MainActor open class UILabel: UIView {
    // https://developer.apple.com/documentation/uikit/uilabel/text
    open var text: String? {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uilabel/font
    open var font: UIFont! {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uilabel/textcolor
    open var textColor: UIColor! {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uilabel/textalignment
    open var textAlignment: NSTextAlignment {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uilabel/numberoflines
    open var numberOfLines: Int {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uicontentsizecategoryadjusting/adjustsfontforcontentsizecategory
    open var adjustsFontForContentSizeCategory: Bool {
        get { fatalError() }
        set { fatalError() }
    }
}

// https://developer.apple.com/documentation/uikit/uitextfield
@MainActor open class UITextField: UIControl {
    // https://developer.apple.com/documentation/uikit/uitextfield/text
    open var text: String? {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uitextfield/placeholder
    open var placeholder: String? {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uitextfield/font
    open var font: UIFont? {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uitextfield/textalignment
    open var textAlignment: NSTextAlignment {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uitextfield/borderstyle-swift.property
    open var borderStyle: UITextField.BorderStyle {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uicontentsizecategoryadjusting/adjustsfontforcontentsizecategory
    open var adjustsFontForContentSizeCategory: Bool {
        get { fatalError() }
        set { fatalError() }
    }

    // UITextField adopts UITextInputTraits:
    // https://developer.apple.com/documentation/uikit/uitextinputtraits/keyboardtype
    open var keyboardType: UIKeyboardType {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uitextinputtraits/textcontenttype
    open var textContentType: UITextContentType! {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uitextinputtraits/issecuretextentry
    open var isSecureTextEntry: Bool {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uitextfield/borderstyle-swift.enum
    public enum BorderStyle: Int, Sendable {
        // https://developer.apple.com/documentation/uikit/uitextfield/borderstyle-swift.enum/none
        case none = 0
        // https://developer.apple.com/documentation/uikit/uitextfield/borderstyle-swift.enum/line
        case line = 1
        // https://developer.apple.com/documentation/uikit/uitextfield/borderstyle-swift.enum/bezel
        case bezel = 2
        // https://developer.apple.com/documentation/uikit/uitextfield/borderstyle-swift.enum/roundedrect
        case roundedRect = 3
    }
}

// https://developer.apple.com/documentation/uikit/uikeyboardtype
public enum UIKeyboardType: Int, Sendable {
    // https://developer.apple.com/documentation/uikit/uikeyboardtype/default
    case `default` = 0
    // https://developer.apple.com/documentation/uikit/uikeyboardtype/asciicapable
    case asciiCapable = 1
    // https://developer.apple.com/documentation/uikit/uikeyboardtype/numbersandpunctuation
    case numbersAndPunctuation = 2
    // https://developer.apple.com/documentation/uikit/uikeyboardtype/url
    case URL = 3
    // https://developer.apple.com/documentation/uikit/uikeyboardtype/numberpad
    case numberPad = 4
    // https://developer.apple.com/documentation/uikit/uikeyboardtype/phonepad
    case phonePad = 5
    // https://developer.apple.com/documentation/uikit/uikeyboardtype/namephonepad
    case namePhonePad = 6
    // https://developer.apple.com/documentation/uikit/uikeyboardtype/emailaddress
    case emailAddress = 7
    // https://developer.apple.com/documentation/uikit/uikeyboardtype/decimalpad
    case decimalPad = 8
    // https://developer.apple.com/documentation/uikit/uikeyboardtype/asciicapablenumberpad
    case asciiCapableNumberPad = 11
}

// https://developer.apple.com/documentation/uikit/uitextcontenttype
public struct UITextContentType: Hashable, RawRepresentable, Sendable {
    public var rawValue: String { fatalError() }
    public init(rawValue: String) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uitextcontenttype/onetimecode
    public static var oneTimeCode: UITextContentType { fatalError() }

    // https://developer.apple.com/documentation/uikit/uitextcontenttype/username
    public static var username: UITextContentType { fatalError() }

    // https://developer.apple.com/documentation/uikit/uitextcontenttype/password
    public static var password: UITextContentType { fatalError() }

    // https://developer.apple.com/documentation/uikit/uitextcontenttype/newpassword
    public static var newPassword: UITextContentType { fatalError() }

    // https://developer.apple.com/documentation/uikit/uitextcontenttype/emailaddress
    public static var emailAddress: UITextContentType { fatalError() }
}

// https://developer.apple.com/documentation/uikit/nstextalignment
public enum NSTextAlignment: Int, Sendable {
    // https://developer.apple.com/documentation/uikit/nstextalignment/left
    case left = 0
    // https://developer.apple.com/documentation/uikit/nstextalignment/center
    case center = 1
    // https://developer.apple.com/documentation/uikit/nstextalignment/right
    case right = 2
    // https://developer.apple.com/documentation/uikit/nstextalignment/justified
    case justified = 3
    // https://developer.apple.com/documentation/uikit/nstextalignment/natural
    case natural = 4
}

// https://developer.apple.com/documentation/uikit/uiactivityindicatorview
@MainActor open class UIActivityIndicatorView: UIView {
    // https://developer.apple.com/documentation/uikit/uiactivityindicatorview/init(style:)
    public init(style: UIActivityIndicatorView.Style) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiactivityindicatorview/init(frame:)
    public override init(frame: CGRect) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiactivityindicatorview/init(coder:)
    public required init(coder: NSCoder) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiactivityindicatorview/startanimating()
    open func startAnimating() { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiactivityindicatorview/stopanimating()
    open func stopAnimating() { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiactivityindicatorview/isanimating
    open var isAnimating: Bool { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiactivityindicatorview/hideswhenstopped
    open var hidesWhenStopped: Bool {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uiactivityindicatorview/style-swift.enum
    public enum Style: Int, Sendable {
        // https://developer.apple.com/documentation/uikit/uiactivityindicatorview/style-swift.enum/medium
        case medium = 100
        // https://developer.apple.com/documentation/uikit/uiactivityindicatorview/style-swift.enum/large
        case large = 101
    }
}

// https://developer.apple.com/documentation/uikit/uistackview
@MainActor open class UIStackView: UIView {
    // https://developer.apple.com/documentation/uikit/uistackview/init(arrangedsubviews:)
    public convenience init(arrangedSubviews views: [UIView]) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uistackview/arrangedsubviews
    open var arrangedSubviews: [UIView] { fatalError() }

    // https://developer.apple.com/documentation/uikit/uistackview/addarrangedsubview(_:)
    open func addArrangedSubview(_ view: UIView) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uistackview/removearrangedsubview(_:)
    open func removeArrangedSubview(_ view: UIView) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uistackview/setcustomspacing(_:after:)
    open func setCustomSpacing(_ spacing: CGFloat, after arrangedSubview: UIView) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uistackview/axis
    open var axis: NSLayoutConstraint.Axis {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uistackview/spacing
    open var spacing: CGFloat {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uistackview/alignment-swift.property
    open var alignment: UIStackView.Alignment {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uistackview/distribution-swift.property
    open var distribution: UIStackView.Distribution {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uistackview/islayoutmarginsrelativearrangement
    open var isLayoutMarginsRelativeArrangement: Bool {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uistackview/alignment-swift.enum
    public enum Alignment: Int, Sendable {
        // https://developer.apple.com/documentation/uikit/uistackview/alignment-swift.enum/fill
        case fill = 0
        // https://developer.apple.com/documentation/uikit/uistackview/alignment-swift.enum/leading
        case leading = 1
        // https://developer.apple.com/documentation/uikit/uistackview/alignment-swift.enum/firstbaseline
        case firstBaseline = 2
        // https://developer.apple.com/documentation/uikit/uistackview/alignment-swift.enum/center
        case center = 3
        // https://developer.apple.com/documentation/uikit/uistackview/alignment-swift.enum/trailing
        case trailing = 4
        // https://developer.apple.com/documentation/uikit/uistackview/alignment-swift.enum/lastbaseline
        case lastBaseline = 5

        // https://developer.apple.com/documentation/uikit/uistackview/alignment-swift.enum/top
        public static var top: UIStackView.Alignment { fatalError() }

        // https://developer.apple.com/documentation/uikit/uistackview/alignment-swift.enum/bottom
        public static var bottom: UIStackView.Alignment { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uistackview/distribution-swift.enum
    public enum Distribution: Int, Sendable {
        // https://developer.apple.com/documentation/uikit/uistackview/distribution-swift.enum/fill
        case fill = 0
        // https://developer.apple.com/documentation/uikit/uistackview/distribution-swift.enum/fillequally
        case fillEqually = 1
        // https://developer.apple.com/documentation/uikit/uistackview/distribution-swift.enum/fillproportionally
        case fillProportionally = 2
        // https://developer.apple.com/documentation/uikit/uistackview/distribution-swift.enum/equalspacing
        case equalSpacing = 3
        // https://developer.apple.com/documentation/uikit/uistackview/distribution-swift.enum/equalcentering
        case equalCentering = 4
    }
}

// MARK: - Actions

// https://developer.apple.com/documentation/uikit/uimenuelement
@MainActor open class UIMenuElement: NSObject {
    // https://developer.apple.com/documentation/uikit/uimenuelement/attributes
    public struct Attributes: OptionSet, Sendable {
        public var rawValue: UInt { fatalError() }
        public init(rawValue: UInt) { fatalError() }

        // https://developer.apple.com/documentation/uikit/uimenuelement/attributes/disabled
        public static var disabled: UIMenuElement.Attributes { fatalError() }

        // https://developer.apple.com/documentation/uikit/uimenuelement/attributes/destructive
        public static var destructive: UIMenuElement.Attributes { fatalError() }

        // https://developer.apple.com/documentation/uikit/uimenuelement/attributes/hidden
        public static var hidden: UIMenuElement.Attributes { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uimenuelement/state
    public enum State: Int, Sendable {
        // https://developer.apple.com/documentation/uikit/uimenuelement/state/off
        case off = 0
        // https://developer.apple.com/documentation/uikit/uimenuelement/state/on
        case on = 1
        // https://developer.apple.com/documentation/uikit/uimenuelement/state/mixed
        case mixed = 2
    }
}

// https://developer.apple.com/documentation/uikit/uiactionhandler
public typealias UIActionHandler = (UIAction) -> Void

// https://developer.apple.com/documentation/uikit/uiaction
@MainActor open class UIAction: UIMenuElement {
    // https://developer.apple.com/documentation/uikit/uiaction/init(title:image:identifier:discoverabilitytitle:attributes:state:handler:)
    public convenience init(
        title: String = "",
        image: UIImage? = nil,
        identifier: UIAction.Identifier? = nil,
        discoverabilityTitle: String? = nil,
        attributes: UIMenuElement.Attributes = [],
        state: UIMenuElement.State = .off,
        handler: @escaping UIActionHandler
    ) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiaction/title
    open var title: String {
        get { fatalError() }
        set { fatalError() }
    }

    // https://developer.apple.com/documentation/uikit/uiaction/sender
    open var sender: Any? { fatalError() }

    // https://developer.apple.com/documentation/uikit/uiaction/identifier-swift.struct
    public struct Identifier: Hashable, RawRepresentable, Sendable {
        public var rawValue: String { fatalError() }
        public init(rawValue: String) { fatalError() }
        public init(_ rawValue: String) { fatalError() }
    }
}

// MARK: - Colors, fonts and images

// https://developer.apple.com/documentation/uikit/uicolor
open class UIColor: NSObject {
    // https://developer.apple.com/documentation/uikit/uicolor/init(red:green:blue:alpha:)
    public init(red: CGFloat, green: CGFloat, blue: CGFloat, alpha: CGFloat) { fatalError() }

    // https://developer.apple.com/documentation/uikit/uicolor/systembackground
    open class var systemBackground: UIColor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uicolor/secondarysystembackground
    open class var secondarySystemBackground: UIColor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uicolor/label
    open class var label: UIColor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uicolor/secondarylabel
    open class var secondaryLabel: UIColor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uicolor/systemred
    open class var systemRed: UIColor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uicolor/tintcolor
    open class var tintColor: UIColor { fatalError() }

    // https://developer.apple.com/documentation/uikit/uicolor/clear
    open class var clear: UIColor { fatalError() }
}

// https://developer.apple.com/documentation/uikit/uifont
open class UIFont: NSObject {
    // https://developer.apple.com/documentation/uikit/uifont/preferredfont(fortextstyle:)
    open class func preferredFont(forTextStyle style: UIFont.TextStyle) -> UIFont { fatalError() }

    // https://developer.apple.com/documentation/uikit/uifont/systemfont(ofsize:)
    open class func systemFont(ofSize fontSize: CGFloat) -> UIFont { fatalError() }

    // https://developer.apple.com/documentation/uikit/uifont/textstyle
    public struct TextStyle: Hashable, RawRepresentable, Sendable {
        public var rawValue: String { fatalError() }
        public init(rawValue: String) { fatalError() }

        // https://developer.apple.com/documentation/uikit/uifont/textstyle/largetitle
        public static var largeTitle: UIFont.TextStyle { fatalError() }

        // https://developer.apple.com/documentation/uikit/uifont/textstyle/title1
        public static var title1: UIFont.TextStyle { fatalError() }

        // https://developer.apple.com/documentation/uikit/uifont/textstyle/title2
        public static var title2: UIFont.TextStyle { fatalError() }

        // https://developer.apple.com/documentation/uikit/uifont/textstyle/headline
        public static var headline: UIFont.TextStyle { fatalError() }

        // https://developer.apple.com/documentation/uikit/uifont/textstyle/subheadline
        public static var subheadline: UIFont.TextStyle { fatalError() }

        // https://developer.apple.com/documentation/uikit/uifont/textstyle/body
        public static var body: UIFont.TextStyle { fatalError() }

        // https://developer.apple.com/documentation/uikit/uifont/textstyle/callout
        public static var callout: UIFont.TextStyle { fatalError() }

        // https://developer.apple.com/documentation/uikit/uifont/textstyle/footnote
        public static var footnote: UIFont.TextStyle { fatalError() }

        // https://developer.apple.com/documentation/uikit/uifont/textstyle/caption1
        public static var caption1: UIFont.TextStyle { fatalError() }
    }
}

// https://developer.apple.com/documentation/uikit/uiimage
open class UIImage: NSObject {
    // https://developer.apple.com/documentation/uikit/uiimage/init(systemname:)
    public init?(systemName name: String) { fatalError() }
}

// MARK: - What Apple's Foundation has and Foundation on Linux lacks

// `String(localized:)` is Foundation's on Apple's platforms (and so reaches any file importing UIKit); Foundation
// on Linux has neither it nor `String.LocalizationValue`. The interpolations are those of Apple's type that the
// examples may use: text and numbers.
extension String {
    // https://developer.apple.com/documentation/swift/string/localizationvalue
    public struct LocalizationValue: Equatable, ExpressibleByStringInterpolation, Sendable {
        public init(stringLiteral value: String) { fatalError() }
        public init(stringInterpolation: String.LocalizationValue.StringInterpolation) { fatalError() }

        // https://developer.apple.com/documentation/swift/string/localizationvalue/stringinterpolation
        public struct StringInterpolation: StringInterpolationProtocol, Sendable {
            public init(literalCapacity: Int, interpolationCount: Int) { fatalError() }
            public mutating func appendLiteral(_ literal: String) { fatalError() }
            public mutating func appendInterpolation(_ string: String) { fatalError() }
            public mutating func appendInterpolation<T: BinaryInteger>(_ value: T) { fatalError() }
            public mutating func appendInterpolation(_ value: Double) { fatalError() }
        }
    }

    // https://developer.apple.com/documentation/swift/string/init(localized:table:bundle:locale:comment:)
    public init(
        localized keyAndValue: String.LocalizationValue,
        table: String? = nil,
        bundle: Bundle? = nil,
        locale: Locale = .current,
        comment: StaticString? = nil
    ) { fatalError() }
}
