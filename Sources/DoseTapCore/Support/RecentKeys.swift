/// The most recent keys, at most `capacity` of them (the oldest forgotten first): the memory of anything a
/// stranger can add keys to — "log once per cause" sets, the BTHome addresses heard, the causes of dropped
/// messages. A key forgotten and seen again counts as new (logged again): bounded memory, never silence.
public struct RecentKeys<Key: Hashable & Sendable>: Sendable {
    public let capacity: Int
    private var order: [Key] = []
    private var members: Set<Key> = []
    private var head = 0

    public init(capacity: Int) { self.capacity = max(1, capacity) }

    public var count: Int { members.count }

    public func contains(_ key: Key) -> Bool { members.contains(key) }

    /// True when `key` was not among the recent ones (it is now, and the oldest may have gone).
    @discardableResult
    public mutating func insert(_ key: Key) -> Bool {
        guard !members.contains(key) else { return false }
        if order.count < capacity {
            order.append(key)
        } else {
            members.remove(order[head])
            order[head] = key
            head = (head + 1) % capacity
        }
        members.insert(key)
        return true
    }

    /// Forgets every key `shouldForget` names (a button removed, a cause that ended).
    public mutating func removeAll(where shouldForget: (Key) -> Bool) {
        let kept = inInsertionOrder.filter { !shouldForget($0) }
        self = RecentKeys(capacity: capacity)
        for key in kept { insert(key) }
    }

    /// Oldest first.
    var inInsertionOrder: [Key] { Array(order[head...] + order[..<head]) }
}
