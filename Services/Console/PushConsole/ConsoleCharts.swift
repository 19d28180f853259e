import Foundation

/// Charts drawn on the server as SVG, readable without colour: every bar carries its label and
/// its figure as text, bars of different series differ in pattern as well as colour, and each
/// chart has a title and a description for screen readers (the figures are also in a table
/// next to it).
package enum ConsoleCharts {
    package struct Bar: Sendable {
        package var label: String
        package var value: Int
        package var kind: String
    }

    /// Horizontal bars, one per stage, scaled to the largest.
    package static func funnel(id: String, title: String, bars: [Bar]) -> String {
        let width = 640
        let labelWidth = 150
        let valueWidth = 70
        let rowHeight = 28
        let height = bars.count * rowHeight + 16
        let largest = max(bars.map(\.value).max() ?? 0, 1)
        let span = width - labelWidth - valueWidth
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" class="chart" id="\(id)" viewBox="0 0 \(width) \(height)" role="img" aria-labelledby="\(id)-title \(id)-desc">
            <title id="\(id)-title">\(ConsoleHTML.escape(title))</title>
            <desc id="\(id)-desc">\(ConsoleHTML.escape(bars.map { "\($0.label) \($0.value)" }.joined(separator: ", ")))</desc>

            """
        for (index, bar) in bars.enumerated() {
            let y = 8 + index * rowHeight
            let length = bar.value == 0 ? 0 : max(2, Int((Double(bar.value) / Double(largest) * Double(span)).rounded()))
            out += """
                <text x="\(labelWidth - 8)" y="\(y + 18)" text-anchor="end" class="label">\(ConsoleHTML.escape(bar.label))</text>
                <rect x="\(labelWidth)" y="\(y + 4)" width="\(length)" height="\(rowHeight - 8)" class="bar \(bar.kind)"/>
                <text x="\(labelWidth + length + 6)" y="\(y + 18)" class="value">\(bar.value)</text>

                """
        }
        return out + "</svg>"
    }

    /// Vertical bars over time: one group per bucket, one bar per series (distinguished by
    /// pattern and legend text), the bucket's time under each group.
    package static func series(id: String, title: String, seriesNames: [String], buckets: [(label: String, counts: [Int])]) -> String {
        let width = 640
        let height = 220
        let left = 48
        let bottom = 40
        let top = 28
        let plotHeight = height - bottom - top
        let largest = max(buckets.flatMap(\.counts).max() ?? 0, 1)
        let groups = max(buckets.count, 1)
        let groupWidth = Double(width - left - 8) / Double(groups)
        let barWidth = max(1.0, (groupWidth - 6) / Double(max(seriesNames.count, 1)))
        let description =
            buckets.isEmpty
            ? "no data yet"
            : buckets.map { bucket in
                "\(bucket.label): " + zip(seriesNames, bucket.counts).map { "\($0) \($1)" }.joined(separator: ", ")
            }.joined(separator: "; ")
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" class="chart" id="\(id)" viewBox="0 0 \(width) \(height)" role="img" aria-labelledby="\(id)-title \(id)-desc">
            <title id="\(id)-title">\(ConsoleHTML.escape(title))</title>
            <desc id="\(id)-desc">\(ConsoleHTML.escape(description))</desc>
            <line x1="\(left)" y1="\(top + plotHeight)" x2="\(width - 8)" y2="\(top + plotHeight)" class="axis"/>
            <text x="\(left - 6)" y="\(top + 4)" text-anchor="end" class="value">\(largest)</text>
            <text x="\(left - 6)" y="\(top + plotHeight)" text-anchor="end" class="value">0</text>

            """
        for (index, name) in seriesNames.enumerated() {
            out += """
                <rect x="\(left + index * 140)" y="6" width="14" height="14" class="bar s\(index)"/><text x="\(left + index * 140 + 20)" y="18" class="label">\(ConsoleHTML.escape(name))</text>

                """
        }
        if buckets.isEmpty {
            out += "<text x=\"\(width / 2)\" y=\"\(top + plotHeight / 2)\" text-anchor=\"middle\" class=\"label\">No data yet</text>\n"
        }
        let labelEvery = max(1, buckets.count / 8)
        for (index, bucket) in buckets.enumerated() {
            let x0 = Double(left) + Double(index) * groupWidth + 3
            for (series, count) in bucket.counts.enumerated() {
                let barHeight = count == 0 ? 0 : max(1, Int((Double(count) / Double(largest) * Double(plotHeight)).rounded()))
                let x = x0 + Double(series) * barWidth
                let tip = ConsoleHTML.escape("\(bucket.label) \(seriesNames[series]): \(count)")
                out +=
                    "<rect x=\"\(fixed(x))\" y=\"\(top + plotHeight - barHeight)\" width=\"\(fixed(barWidth))\" height=\"\(barHeight)\" class=\"bar s\(series)\"><title>\(tip)</title></rect>\n"
            }
            if index % labelEvery == 0 {
                out +=
                    "<text x=\"\(fixed(x0 + groupWidth / 2 - 3))\" y=\"\(top + plotHeight + 16)\" text-anchor=\"middle\" class=\"label\">\(ConsoleHTML.escape(bucket.label))</text>\n"
            }
        }
        return out + "</svg>"
    }

    /// One decimal, for SVG coordinates.
    static func fixed(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(abs(tenths % 10))"
    }
}
