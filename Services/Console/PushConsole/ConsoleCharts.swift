import Foundation

/// Charts drawn on the server as SVG, readable without colour: every bar carries its label and
/// its figure as text, bars of different series differ in pattern as well as colour, and each
/// chart has a title and a description for screen readers (the figures are also in a table
/// next to it). This computes each chart's geometry; the `funnel-chart` and `series-chart`
/// templates draw it.
package enum ConsoleCharts {
    package struct Bar: Sendable {
        package var label: String
        package var value: Int
        package var kind: String
    }

    /// Horizontal bars, one per stage, scaled to the largest.
    static func funnel(id: String, title: String, bars: [Bar]) -> [String: Any] {
        let width = 640
        let labelWidth = 150
        let valueWidth = 70
        let rowHeight = 28
        let largest = max(bars.map(\.value).max() ?? 0, 1)
        let span = width - labelWidth - valueWidth
        return [
            "id": id, "title": title, "width": width, "height": bars.count * rowHeight + 16,
            "description": bars.map { "\($0.label) \($0.value)" }.joined(separator: ", "),
            "bars": bars.enumerated().map { index, bar -> [String: Any] in
                let y = 8 + index * rowHeight
                let length = bar.value == 0 ? 0 : max(2, Int((Double(bar.value) / Double(largest) * Double(span)).rounded()))
                return [
                    "label": bar.label, "value": bar.value, "kind": bar.kind, "labelX": labelWidth - 8, "textY": y + 18, "barX": labelWidth, "barY": y + 4,
                    "length": length, "barHeight": rowHeight - 8, "valueX": labelWidth + length + 6,
                ]
            },
        ]
    }

    /// Vertical bars over time: one group per bucket, one bar per series (distinguished by
    /// pattern and legend text), the bucket's time under each group.
    static func series(id: String, title: String, seriesNames: [String], buckets: [(label: String, counts: [Int])]) -> [String: Any] {
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
        let labelEvery = max(1, buckets.count / 8)
        return [
            "id": id, "title": title, "width": width, "height": height, "description": description, "left": left, "baseY": top + plotHeight,
            "axisEnd": width - 8, "scaleX": left - 6, "topY": top + 4, "largest": largest,
            "legend": seriesNames.enumerated().map { index, name in
                ["series": index, "name": name, "x": left + index * 140, "textX": left + index * 140 + 20] as [String: Any]
            },
            "noData": buckets.isEmpty ? ["x": width / 2, "y": top + plotHeight / 2] as [String: Any] : false,
            "groups": buckets.enumerated().map { index, bucket -> [String: Any] in
                let x0 = Double(left) + Double(index) * groupWidth + 3
                let bars = bucket.counts.enumerated().map { series, count -> [String: Any] in
                    let barHeight = count == 0 ? 0 : max(1, Int((Double(count) / Double(largest) * Double(plotHeight)).rounded()))
                    return [
                        "x": fixed(x0 + Double(series) * barWidth), "y": top + plotHeight - barHeight, "width": fixed(barWidth), "height": barHeight,
                        "series": series, "tip": "\(bucket.label) \(seriesNames[series]): \(count)",
                    ]
                }
                let label: Any =
                    index % labelEvery == 0 ? ["x": fixed(x0 + groupWidth / 2 - 3), "y": top + plotHeight + 16, "text": bucket.label] as [String: Any] : false
                return ["bars": bars, "label": label]
            },
        ]
    }

    /// One decimal, for SVG coordinates.
    static func fixed(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(abs(tenths % 10))"
    }
}
