import ArgumentParser
import Foundation
import Logging
import PostgresNIO

/// `pushctl report <deliveryId>`: a delivery's funnel from `push.delivery_indicators` (a key
/// lookup, no scan of the logs), as text and optionally as an SVG bar chart.
struct Report: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a delivery's funnel (targeted, excluded, sent, failed, received, opened) from push.delivery_indicators.",
        discussion:
            "Targeted is to_deliver (messages created after exclusions); received and opened are distinct messages with such a hit; rates are over sent. A delivery with A/B variants adds a line per variant (push.delivery_variants)."
    )

    @Argument(help: "The delivery id (push.deliveries.delivery_id).")
    var deliveryId: String

    @Option(help: "Also write the funnel as an SVG bar chart to this file.")
    var svg: String?

    func run() async throws {
        let context = try ToolContext()
        let logger = context.logger
        let id = deliveryId
        guard let funnel = try await context.withPostgres({ client in try await DeliveryFunnel.load(deliveryId: id, client: client, logger: logger) }) else {
            throw ValidationError("no indicators for delivery \(id) (unknown delivery, or nothing projected yet)")
        }
        print(funnel.text, terminator: "")
        if let svg {
            try funnel.svg.write(toFile: svg, atomically: true, encoding: .utf8)
            print("wrote \(svg)")
        }
    }
}

/// One delivery's indicators, as the report shows them.
struct DeliveryFunnel: Sendable {
    var deliveryId: String
    var serviceName: String?
    var requestId: String?
    var toDeliver: Int?
    var excluded: Int?
    var sent, failed, failedHard, failedSoft, failedIgnored, expired, impressions, opens: Int
    /// Per A/B variant (`push.delivery_variants`), by name; empty without variants.
    var variants: [Variant] = []

    struct Variant: Sendable {
        var name: String
        var sent, received, opened: Int
    }

    static func load(deliveryId: String, client: PostgresClient, logger: Logger) async throws -> DeliveryFunnel? {
        let rows = try await client.query(
            """
            SELECT d.service_name, d.request_id, i.to_deliver, i.excluded, i.sent, i.failed, i.failed_hard, i.failed_soft,
                   i.failed_ignored, i.expired, i.impressions, i.opens
            FROM push.delivery_indicators i LEFT JOIN push.deliveries d USING (delivery_id)
            WHERE i.delivery_id = \(deliveryId)
            """,
            logger: logger
        )
        var funnel: DeliveryFunnel?
        for try await r in rows.decode((String?, String?, Int?, Int?, Int, Int, Int, Int, Int, Int, Int, Int).self) {
            funnel = DeliveryFunnel(
                deliveryId: deliveryId, serviceName: r.0, requestId: r.1, toDeliver: r.2, excluded: r.3, sent: r.4, failed: r.5,
                failedHard: r.6, failedSoft: r.7, failedIgnored: r.8, expired: r.9, impressions: r.10, opens: r.11
            )
        }
        guard var funnel else { return nil }
        let variants = try await client.query(
            "SELECT variant, sent, received, opened FROM push.delivery_variants WHERE delivery_id = \(deliveryId) ORDER BY variant", logger: logger)
        for try await (name, sent, received, opened) in variants.decode((String, Int, Int, Int).self) {
            funnel.variants.append(Variant(name: name, sent: sent, received: received, opened: opened))
        }
        return funnel
    }

    /// The funnel's bars, in order: (label, value, note).
    var stages: [(label: String, value: Int, note: String)] {
        let targeted = toDeliver ?? 0
        return [
            ("targeted", targeted, toDeliver == nil ? "not planned yet" : ""),
            ("excluded", excluded ?? 0, "quarantined devices left out"),
            ("sent", sent, Self.percent(sent, of: targeted, "targeted")),
            ("failed", failed, "hard \(failedHard), soft \(failedSoft), ignored \(failedIgnored)"),
            ("received", impressions, Self.percent(impressions, of: sent, "sent")),
            ("opened", opens, Self.percent(opens, of: sent, "sent")),
        ]
    }

    static func percent(_ part: Int, of whole: Int, _ name: String) -> String {
        whole == 0 ? "" : String(format: "%.1f", Double(part) * 100 / Double(whole)) + "% of \(name)"
    }

    var text: String {
        var lines = ["delivery \(deliveryId)" + (serviceName.map { " (service \($0), request \(requestId ?? "?"))" } ?? "")]
        let width = stages.map { String($0.value).count }.max() ?? 1
        for stage in stages {
            let value = String(repeating: " ", count: width - String(stage.value).count) + String(stage.value)
            lines.append("  \(stage.label.padding(toLength: 9, withPad: " ", startingAt: 0)) \(value)" + (stage.note.isEmpty ? "" : "  \(stage.note)"))
        }
        let pending = (toDeliver ?? 0) - sent - failed - expired
        lines.append("  expired \(expired), still pending \(max(pending, 0))")
        for variant in variants {
            lines.append(
                "  variant \(variant.name): sent \(variant.sent), received \(variant.received), opened \(variant.opened)"
                    + (variant.sent == 0 ? "" : " (" + Self.percent(variant.opened, of: variant.sent, "sent") + ")"))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A horizontal bar chart: one bar per stage, scaled to the largest value.
    var svg: String {
        let barHeight = 28
        let gap = 8
        let left = 90
        let barWidth = 420
        let top = 40
        let height = top + stages.count * (barHeight + gap) + 10
        let largest = max(stages.map(\.value).max() ?? 0, 1)
        var parts = [
            #"<svg xmlns="http://www.w3.org/2000/svg" width="\#(left + barWidth + 110)" height="\#(height)" font-family="sans-serif" font-size="13">"#,
            #"<text x="10" y="24" font-size="15" font-weight="bold">\#(Self.escape("Delivery \(deliveryId)" + (serviceName.map { " (\($0))" } ?? "")))</text>"#,
        ]
        let colors = ["targeted": "#4c78a8", "excluded": "#9d9d9d", "sent": "#54a24b", "failed": "#e45756", "received": "#72b7b2", "opened": "#f58518"]
        for (index, stage) in stages.enumerated() {
            let y = top + index * (barHeight + gap)
            let width = stage.value == 0 ? 0 : max(1, stage.value * barWidth / largest)
            parts.append(#"<text x="\#(left - 8)" y="\#(y + 19)" text-anchor="end">\#(stage.label)</text>"#)
            parts.append(
                #"<rect x="\#(left)" y="\#(y)" width="\#(width)" height="\#(barHeight)" fill="\#(colors[stage.label] ?? "#888")"><title>\#(Self.escape(stage.note))</title></rect>"#
            )
            parts.append(#"<text x="\#(left + width + 6)" y="\#(y + 19)">\#(stage.value)</text>"#)
        }
        parts.append("</svg>")
        return parts.joined(separator: "\n") + "\n"
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
