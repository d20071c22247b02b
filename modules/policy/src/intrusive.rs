// SPDX-License-Identifier: GPL-2.0

//! Intrusive structures over index-linked nodes, shared by the policies.
//!
//! The nodes are a policy's per-request slots, in storage the caller hands
//! in; they link each other by index, [`NIL`] meaning none, so nothing here
//! allocates and a node is found from its tag in O(1).
//!
//! - [`List`]: a doubly linked list with head and tail (FIFOs, the at-head
//!   dispatch lists).
//! - [`Tree`]: a sort tree, a treap with parent links: insertion and
//!   lookups in expected O(log n), removal in expected O(1) plus the walk a
//!   caller makes for a successor. A node entering the tree goes after the
//!   nodes of equal key, as C's `elv_rb_add()` puts equal sectors. The heap
//!   priorities come from the caller; in-order walks depend only on the
//!   keys, so the tree's shape never shows in what a policy decides.

/// The "no node" link value.
pub(crate) const NIL: u32 = u32::MAX;

/// Left child index in [`TreeLinks::child`].
pub(crate) const LEFT: usize = 0;
/// Right child index in [`TreeLinks::child`].
pub(crate) const RIGHT: usize = 1;

// ----- lists -----------------------------------------------------------------

/// A node's links in a [`List`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ListLinks {
    pub(crate) prev: u32,
    pub(crate) next: u32,
}

impl ListLinks {
    /// The links of a node in no list.
    pub(crate) const NONE: ListLinks = ListLinks {
        prev: NIL,
        next: NIL,
    };
}

/// A node that can be on one [`List`] at a time.
pub(crate) trait ListNode {
    fn list_links(&self) -> &ListLinks;
    fn list_links_mut(&mut self) -> &mut ListLinks;
}

/// Head and tail of a doubly linked list of nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct List {
    pub(crate) head: u32,
    pub(crate) tail: u32,
}

impl List {
    /// The empty list.
    pub(crate) const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    /// Links `x`, on no list, after `after` (`NIL`: at the front).
    #[inline]
    pub(crate) fn insert_after<N: ListNode>(&mut self, nodes: &mut [N], after: u32, x: u32) {
        let next = if after == NIL {
            self.head
        } else {
            nodes[after as usize].list_links().next
        };
        *nodes[x as usize].list_links_mut() = ListLinks { prev: after, next };
        if after == NIL {
            self.head = x;
        } else {
            nodes[after as usize].list_links_mut().next = x;
        }
        if next == NIL {
            self.tail = x;
        } else {
            nodes[next as usize].list_links_mut().prev = x;
        }
    }

    /// Links `x`, on no list, at the back.
    #[inline]
    pub(crate) fn push_back<N: ListNode>(&mut self, nodes: &mut [N], x: u32) {
        let tail = self.tail;
        self.insert_after(nodes, tail, x);
    }

    /// Unlinks `x`, which is on this list.
    #[inline]
    pub(crate) fn remove<N: ListNode>(&mut self, nodes: &mut [N], x: u32) {
        let ListLinks { prev, next } = *nodes[x as usize].list_links();
        if prev == NIL {
            self.head = next;
        } else {
            nodes[prev as usize].list_links_mut().next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            nodes[next as usize].list_links_mut().prev = prev;
        }
        *nodes[x as usize].list_links_mut() = ListLinks::NONE;
    }

    /// Walks the list checking its links and that `member` holds for each
    /// node; returns its length.
    #[cfg(any(test, debug_assertions, feature = "invariants"))]
    pub(crate) fn check<N: ListNode>(
        &self,
        nodes: &[N],
        member: impl Fn(&N) -> bool,
    ) -> Result<usize, &'static str> {
        let mut prev = NIL;
        let mut cur = self.head;
        let mut len = 0;
        while cur != NIL {
            len += 1;
            let Some(node) = nodes.get(cur as usize) else {
                return Err("list link out of range");
            };
            if len > nodes.len() {
                return Err("list has a cycle");
            }
            if node.list_links().prev != prev || !member(node) {
                return Err("list badly linked");
            }
            prev = cur;
            cur = node.list_links().next;
        }
        if self.tail != prev {
            return Err("list tail wrong");
        }
        Ok(len)
    }
}

// ----- sort trees ------------------------------------------------------------

/// A node's links in a [`Tree`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TreeLinks {
    /// Children, by side (`LEFT`, `RIGHT`), so that a descent picks the
    /// side from a comparison instead of branching on it.
    pub(crate) child: [u32; 2],
    pub(crate) parent: u32,
    /// Heap priority: a node's is never below its children's.
    pub(crate) prio: u32,
}

impl TreeLinks {
    /// The links of a node in no tree.
    pub(crate) const NONE: TreeLinks = TreeLinks {
        child: [NIL; 2],
        parent: NIL,
        prio: 0,
    };
}

/// A node that can be in one [`Tree`] at a time.
pub(crate) trait TreeNode {
    /// The sort key.
    type Key: Ord + Copy;
    fn tree_links(&self) -> &TreeLinks;
    fn tree_links_mut(&mut self) -> &mut TreeLinks;
    /// The key of this node, which is node `index`.
    fn key(&self, index: u32) -> Self::Key;
}

/// A link that points at a subtree.
#[derive(Clone, Copy)]
enum Link {
    /// The tree's root.
    Root,
    /// A child of a node, on side `LEFT` or `RIGHT`.
    Child(u32, usize),
}

/// A sort tree: the nodes and where its root is kept.
pub(crate) struct Tree<'a, N> {
    pub(crate) nodes: &'a mut [N],
    pub(crate) root: &'a mut u32,
}

impl<N: TreeNode> Tree<'_, N> {
    #[inline]
    fn links(&self, i: u32) -> &TreeLinks {
        self.nodes[i as usize].tree_links()
    }

    #[inline]
    fn links_mut(&mut self, i: u32) -> &mut TreeLinks {
        self.nodes[i as usize].tree_links_mut()
    }

    #[inline]
    fn key(&self, i: u32) -> N::Key {
        self.nodes[i as usize].key(i)
    }

    #[inline]
    fn get(&self, link: Link) -> u32 {
        match link {
            Link::Root => *self.root,
            Link::Child(n, side) => self.links(n).child[side],
        }
    }

    /// Points `link` at `to`, and `to` back at its new parent.
    #[inline]
    fn set(&mut self, link: Link, to: u32) {
        let parent = match link {
            Link::Root => {
                *self.root = to;
                NIL
            }
            Link::Child(n, side) => {
                self.links_mut(n).child[side] = to;
                n
            }
        };
        if to != NIL {
            self.links_mut(to).parent = parent;
        }
    }

    /// Inserts `x`, in no tree, with heap priority `prio`, after the nodes
    /// of equal key.
    #[inline(always)]
    pub(crate) fn insert(&mut self, x: u32, prio: u32) {
        *self.links_mut(x) = TreeLinks {
            child: [NIL; 2],
            parent: NIL,
            prio,
        };
        // Into an empty tree (on a fast device, nearly always) here; the
        // descent and the split out of line.
        if *self.root == NIL {
            *self.root = x;
        } else {
            self.insert_below(x, prio);
        }
    }

    /// [`Tree::insert`] into a non-empty tree, `x`'s links set.
    fn insert_below(&mut self, x: u32, prio: u32) {
        let key = self.key(x);
        // Descend to where x's heap priority puts it.
        let mut link = Link::Root;
        let mut cur = self.get(link);
        while cur != NIL && self.links(cur).prio >= prio {
            link = Link::Child(cur, usize::from(key >= self.key(cur)));
            cur = self.get(link);
        }
        self.set(link, x);
        // Split the displaced subtree around x's key.
        let mut hooks = [Link::Child(x, LEFT), Link::Child(x, RIGHT)];
        while cur != NIL {
            // Nodes up to x's key go left of x, continuing to their right.
            let side = usize::from(self.key(cur) > key);
            self.set(hooks[side], cur);
            hooks[side] = Link::Child(cur, side ^ 1);
            cur = self.links(cur).child[side ^ 1];
        }
        self.set(hooks[LEFT], NIL);
        self.set(hooks[RIGHT], NIL);
    }

    /// Takes `x` out of the tree; tells whether it was in it (a node
    /// whose parent does not point at it is left alone).
    pub(crate) fn remove(&mut self, x: u32) -> bool {
        // The link that points at x.
        let parent = self.links(x).parent;
        let link = if parent == NIL {
            if *self.root != x {
                return false;
            }
            Link::Root
        } else {
            match self.links(parent).child {
                [l, _] if l == x => Link::Child(parent, LEFT),
                [_, r] if r == x => Link::Child(parent, RIGHT),
                _ => return false,
            }
        };
        let [mut l, mut r] = self.links(x).child;
        // Replace x by the merge of its subtrees.
        let mut hook = link;
        loop {
            if l == NIL {
                self.set(hook, r);
                break;
            }
            if r == NIL {
                self.set(hook, l);
                break;
            }
            if self.links(l).prio > self.links(r).prio {
                self.set(hook, l);
                hook = Link::Child(l, RIGHT);
                l = self.links(l).child[RIGHT];
            } else {
                self.set(hook, r);
                hook = Link::Child(r, LEFT);
                r = self.links(r).child[LEFT];
            }
        }
        let links = self.links_mut(x);
        links.child = [NIL; 2];
        links.parent = NIL;
        true
    }
}

/// Whether `x` is the only node of the tree rooted at `root`.
#[inline]
pub(crate) fn tree_is_sole<N: TreeNode>(nodes: &[N], root: u32, x: u32) -> bool {
    let l = nodes[x as usize].tree_links();
    l.child == [NIL; 2] && l.parent == NIL && root == x
}

/// The first node in key order of the tree rooted at `root`, or `NIL`.
pub(crate) fn tree_first<N: TreeNode>(nodes: &[N], root: u32) -> u32 {
    let mut x = root;
    if x == NIL {
        return NIL;
    }
    while nodes[x as usize].tree_links().child[LEFT] != NIL {
        x = nodes[x as usize].tree_links().child[LEFT];
    }
    x
}

/// The last node in key order of the tree rooted at `root`, or `NIL`.
pub(crate) fn tree_last<N: TreeNode>(nodes: &[N], root: u32) -> u32 {
    let mut x = root;
    if x == NIL {
        return NIL;
    }
    while nodes[x as usize].tree_links().child[RIGHT] != NIL {
        x = nodes[x as usize].tree_links().child[RIGHT];
    }
    x
}

/// The node after (`side` `RIGHT`) or before (`LEFT`) `x` in key order,
/// or `NIL`.
#[inline]
fn tree_step<N: TreeNode>(nodes: &[N], x: u32, side: usize) -> u32 {
    let at = |i: u32| nodes[i as usize].tree_links();
    let mut cur = at(x).child[side];
    if cur != NIL {
        while at(cur).child[side ^ 1] != NIL {
            cur = at(cur).child[side ^ 1];
        }
        return cur;
    }
    let mut child = x;
    let mut parent = at(x).parent;
    while parent != NIL && at(parent).child[side] == child {
        child = parent;
        parent = at(parent).parent;
    }
    parent
}

/// The node after `x` in key order, or `NIL`.
#[inline]
pub(crate) fn tree_next<N: TreeNode>(nodes: &[N], x: u32) -> u32 {
    tree_step(nodes, x, RIGHT)
}

/// The node before `x` in key order, or `NIL`.
#[inline]
pub(crate) fn tree_prev<N: TreeNode>(nodes: &[N], x: u32) -> u32 {
    tree_step(nodes, x, LEFT)
}

/// The first node of the tree rooted at `root` whose key is at least
/// `key`, or `NIL`.
#[inline]
pub(crate) fn tree_lower_bound<N: TreeNode>(nodes: &[N], root: u32, key: N::Key) -> u32 {
    let mut cur = root;
    let mut res = NIL;
    while cur != NIL {
        let n = &nodes[cur as usize];
        let below = n.key(cur) < key;
        res = if below { res } else { cur };
        cur = n.tree_links().child[usize::from(below)];
    }
    res
}

/// Walks the tree rooted at `root` in key order, checking its links, the
/// heap and key orders, and that `member` holds for each node; returns the
/// number of nodes.
#[cfg(any(test, debug_assertions, feature = "invariants"))]
pub(crate) fn tree_check<N: TreeNode>(
    nodes: &[N],
    root: u32,
    member: impl Fn(&N) -> bool,
) -> Result<usize, &'static str> {
    let valid = |i: u32| i == NIL || (i as usize) < nodes.len();
    if !valid(root) {
        return Err("tree link out of range");
    }
    if root != NIL && nodes[root as usize].tree_links().parent != NIL {
        return Err("tree root has a parent");
    }
    let mut count = 0usize;
    let mut prev: Option<N::Key> = None;
    let mut x = tree_first(nodes, root);
    while x != NIL {
        count += 1;
        if count > nodes.len() {
            return Err("tree has a cycle");
        }
        let n = &nodes[x as usize];
        let links = n.tree_links();
        if !member(n) {
            return Err("tree node does not belong in it");
        }
        if !links.child.into_iter().chain([links.parent]).all(valid) {
            return Err("tree link out of range");
        }
        if links.child[LEFT] == links.child[RIGHT] && links.child[LEFT] != NIL {
            return Err("tree node has one child twice");
        }
        for c in links.child {
            if c != NIL {
                let cl = nodes[c as usize].tree_links();
                if cl.parent != x {
                    return Err("tree child's parent link wrong");
                }
                if cl.prio > links.prio {
                    return Err("tree heap order broken");
                }
            }
        }
        let key = n.key(x);
        if prev.is_some_and(|p| p > key) {
            return Err("tree out of key order");
        }
        prev = Some(key);
        x = tree_next(nodes, x);
    }
    Ok(count)
}
