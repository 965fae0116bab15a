import Foundation

/// Charts drawn on the server as inline SVG: no script, no asset, nothing the policy has to allow.
/// Each is an image with a title and a description for screen readers, and the page shows the same
/// numbers in a table beside it. Only numbers computed here and escaped labels go into the markup.
enum ConsoleCharts {
    static let width = 720
    static let height = 240

    /// Vertical bars, one per point, oldest first; a nil value keeps its slot empty (not known);
    /// `alternate` draws them in the second colour.
    static func bars(
        id: String,
        title: String,
        description: String,
        points: [(label: String, value: Int?)],
        alternate: Bool = false
    )
        -> HTML
    {
        let (left, right, top, bottom) = (48, 12, 16, 36)
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let maximum = max(1, points.compactMap(\.value).max() ?? 0)
        let slot = Double(plotWidth) / Double(max(1, points.count))
        // Few days make wide slots: a bar stays a bar.
        let barWidth = max(1, min(slot * 0.7, 48))
        // At most about 12 labels under the axis, so they never overlap.
        let labelEvery = max(1, Int((Double(points.count) / 12).rounded(.up)))
        var marks = HTML.empty
        for (index, point) in points.enumerated() {
            let x = Double(left) + slot * Double(index) + (slot - barWidth) / 2
            if let value = point.value {
                let barHeight = Double(plotHeight) * Double(value) / Double(maximum)
                let y = Double(top + plotHeight) - barHeight
                marks += """
                    <rect class="bar\(alternate ? " alt" : "")" x="\(format(x))" y="\(format(y))" width="\(format(barWidth))" height="\(format(barHeight))"><title>\(point.label): \(value)</title></rect>
                    """
                if points.count <= 31 {
                    marks += """
                        <text x="\(format(x + barWidth / 2))" y="\(format(y - 4))" text-anchor="middle">\(value)</text>
                        """
                }
            }
            if index % labelEvery == 0 {
                marks += """
                    <text x="\(format(x + barWidth / 2))" y="\(height - bottom + 16)" text-anchor="middle">\(point.label)</text>
                    """
            }
        }
        let axis: HTML = """
            <line class="axis" x1="\(left)" y1="\(top + plotHeight)" x2="\(width - right)" y2="\(top + plotHeight)"></line>
            <line class="axis" x1="\(left)" y1="\(top)" x2="\(left)" y2="\(top + plotHeight)"></line>
            <text x="\(left - 6)" y="\(top + plotHeight)" text-anchor="end">0</text>
            <text x="\(left - 6)" y="\(top + 10)" text-anchor="end">\(maximum)</text>
            """
        let empty: HTML =
            points.isEmpty
            ? "<text x=\"\(width / 2)\" y=\"\(top + plotHeight / 2)\" text-anchor=\"middle\">No days in this window</text>"
            : ""
        return frame(id: id, title: title, description: description, content: axis + marks + empty)
    }

    /// The funnel as horizontal bars, each as long as its share of the first step, with its count
    /// and its rate from the step before.
    static func funnel(
        id: String,
        title: String,
        description: String,
        steps: [(name: String, count: Int, rate: Double?)]
    )
        -> HTML
    {
        let (labelWidth, right, rowHeight) = (170, 150, 40)
        let first = max(1, steps.first?.count ?? 0)
        let plotWidth = width - labelWidth - right
        var marks = HTML.empty
        for (index, step) in steps.enumerated() {
            let y = 12 + index * rowHeight
            let length = Double(plotWidth) * Double(step.count) / Double(first)
            let rate: String = step.rate.map { " (" + percent($0) + ")" } ?? ""
            marks += """
                <text x="0" y="\(y + 19)">\(step.name)</text>
                <rect class="bar" x="\(labelWidth)" y="\(y)" width="\(format(max(1, length)))" height="26"><title>\(step.name): \(step.count)</title></rect>
                <text x="\(format(Double(labelWidth) + max(1, length) + 8))" y="\(y + 19)">\(step.count)\(rate)</text>
                """
        }
        let chartHeight = 12 + steps.count * rowHeight
        return frame(id: id, title: title, description: description, content: marks, height: chartHeight)
    }

    /// The `<svg>` element in a figure: an image named by its title and description, with the title
    /// also shown as the figure's caption.
    private static func frame(
        id: String,
        title: String,
        description: String,
        content: HTML,
        height: Int = height
    ) -> HTML {
        """
        <figure class="chart-figure">
        <figcaption aria-hidden="true">\(title)</figcaption>
        <svg class="chart" viewBox="0 0 \(width) \(height)" role="img" aria-labelledby="\(id)-title \(id)-desc" xmlns="http://www.w3.org/2000/svg">
        <title id="\(id)-title">\(title)</title>
        <desc id="\(id)-desc">\(description)</desc>
        \(content)
        </svg>
        </figure>
        """
    }

    /// A coordinate with at most one decimal.
    static func format(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    /// A rate as a percentage with one decimal.
    static func percent(_ rate: Double) -> String {
        String(format: "%.1f%%", rate * 100)
    }
}
