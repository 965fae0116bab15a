import UpgradeEngine

/// The console's layout and the small pieces its pages are made of. Each returns `HTML`, so every
/// value it is given is escaped on the way in.
enum ConsolePage {
    /// A whole document: language, character set, a viewport for phones and the stylesheet.
    static func document(title: String, body: HTML) -> HTML {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>\(title) · siwa-upgrade console</title>
        <link rel="stylesheet" href="\(ConsoleStylesheet.path)">
        </head>
        <body>
        <a class="skip" href="#main">Skip to content</a>
        \(body)
        </body>
        </html>

        """
    }

    /// The page of someone not signed in: a banner and the content.
    static func bare(title: String, content: HTML) -> HTML {
        """
        <header><p class="brand">siwa-upgrade console</p></header>
        <main id="main" tabindex="-1">
        <h1>\(title)</h1>
        \(content)
        </main>
        """
    }

    /// The page of a signed-in member of staff: the navigation their token's scopes allow, who
    /// they are, sign-out, and the content under the page's heading.
    static func signedIn(
        title: String,
        section: ConsoleSection?,
        session: ConsoleSessions.Session,
        content: HTML
    )
        -> HTML
    {
        let links = ConsoleSection.allCases.filter { $0.isVisible(to: session.token) }.map { item -> HTML in
            let current: HTML = item == section ? #" aria-current="page""# : ""
            return "<li><a href=\"\(item.path)\"\(current)>\(item.title)</a></li>"
        }
        let scopes = session.token.scopes.map(\.rawValue).joined(separator: ", ")
        let body: HTML = """
            <header>
            <p class="brand">siwa-upgrade console</p>
            <nav aria-label="Console"><ul>\(HTML.joined(links))</ul></nav>
            <p class="who">Signed in with <span class="mono">\(session.token.name)</span> (\(scopes))</p>
            <form method="post" action="/sign-out">\(csrfField(session.csrf))<button type="submit" class="secondary">Sign out</button></form>
            </header>
            <main id="main" tabindex="-1">
            <h1>\(title)</h1>
            \(content)
            </main>
            """
        return document(title: title, body: body)
    }

    /// The hidden form token every form carries.
    static func csrfField(_ token: String) -> HTML {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(token)\">"
    }

    /// The sign-in form; `problem` says why the last attempt failed.
    static func signInForm(csrf: String, problem: String?) -> HTML {
        let notice: HTML = problem.map { message(text: $0, error: true, role: "alert") } ?? ""
        return """
            \(notice)
            <section aria-labelledby="sign-in-heading">
            <h2 id="sign-in-heading">Sign in with an admin token</h2>
            <form method="post" action="/sign-in" class="stack">
            \(csrfField(csrf))
            <label for="token">Admin token</label>
            <input type="password" id="token" name="token" autocomplete="off" required aria-describedby="token-hint">
            <p class="hint" id="token-hint">A token from <code>upgrade-cli admin tokens add</code>. Its scopes decide what you see: <code>accounts</code> to look accounts up and delete them, <code>audit</code> for audit trails and the background work. The session ends after \(ConsoleSessions.lifetime / 60) minutes, on sign-out, or when the token leaves the token file.</p>
            <button type="submit">Sign in</button>
            </form>
            </section>
            """
    }

    /// What a POST without a live session gets.
    static func signedOut() -> HTML {
        message("Your session has ended, so nothing was changed.", error: true)
            + "<p><a href=\"/\">Sign in again</a></p>"
    }

    /// A short message in a box, marked as an error or a notice.
    static func message(_ text: String, error: Bool = false) -> HTML {
        message(text: text, error: error, role: error ? "alert" : "status")
    }

    static func message(text: String, error: Bool, role: String) -> HTML {
        "<div class=\"card \(error ? "error" : "notice")\" role=\"\(role)\"><p>\(text)</p></div>"
    }

    /// A table with a caption and column headers; `numeric` columns are right-aligned. An empty
    /// table says so in one row.
    static func table(caption: String, headers: [String], rows: [[HTML]], numeric: Set<Int> = []) -> HTML {
        let head = HTML.joined(
            headers.enumerated().map { index, name -> HTML in
                "<th scope=\"col\"\(numeric.contains(index) ? HTML(#" class="num""#) : "")>\(name)</th>"
            }
        )
        let body: HTML
        if rows.isEmpty {
            body = "<tr><td colspan=\"\(headers.count)\">None.</td></tr>"
        } else {
            body = HTML.joined(
                rows.map { cells -> HTML in
                    let row = HTML.joined(
                        cells.enumerated().map { index, cell -> HTML in
                            "<td\(numeric.contains(index) ? HTML(#" class="num""#) : "")>\(cell)</td>"
                        }
                    )
                    return "<tr>\(row)</tr>"
                }
            )
        }
        return """
            <div class="table-wrap"><table>
            <caption>\(caption)</caption>
            <thead><tr>\(head)</tr></thead>
            <tbody>\(body)</tbody>
            </table></div>
            """
    }

    /// Label and value pairs, as a description list.
    static func facts(_ pairs: [(String, HTML)]) -> HTML {
        let items = HTML.joined(pairs.map { name, value -> HTML in "<dt>\(name)</dt><dd>\(value)</dd>" })
        return "<dl class=\"facts\">\(items)</dl>"
    }

    /// Headline numbers, as a description list of cards.
    static func stats(label: String, _ pairs: [(String, Int)]) -> HTML {
        let items = HTML.joined(
            pairs.map { name, value -> HTML in "<div class=\"stat\"><dt>\(name)</dt><dd>\(value)</dd></div>" }
        )
        return "<dl class=\"stats\" aria-label=\"\(label)\">\(items)</dl>"
    }

    /// A Unix time as RFC 3339 in UTC, machine-readable too; a dash for none.
    static func time(_ seconds: Int64?) -> HTML {
        guard let seconds else { return "–" }
        let text = RFC3339.utc(seconds: seconds)
        return "<time datetime=\"\(text)\">\(text)</time>"
    }

    /// Text in a monospace font (ids, types).
    static func mono(_ text: String?) -> HTML {
        guard let text else { return "–" }
        return "<span class=\"mono\">\(text)</span>"
    }

    /// Optional text, a dash for none.
    static func text(_ text: String?) -> HTML {
        text.map { HTML(text: $0) } ?? "–"
    }
}
