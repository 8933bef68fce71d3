//! The table of GPU kernels: one name scheme, used by the entry points and by
//! the host when it looks kernels up.

/// A kernel family; each is instantiated per lattice and precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKind {
    /// [`crate::stream::stream_collide_esoteric`].
    StreamCollideEsoteric,
    /// [`crate::stream::stream_collide_two_lattice`].
    StreamCollideTwoLattice,
    /// [`crate::stream::init_equilibrium`].
    InitEquilibrium,
    /// [`crate::stream::fields`].
    Fields,
}

impl KernelKind {
    /// Every kernel family.
    pub const ALL: [KernelKind; 4] = [
        KernelKind::StreamCollideEsoteric,
        KernelKind::StreamCollideTwoLattice,
        KernelKind::InitEquilibrium,
        KernelKind::Fields,
    ];

    /// Prefix of the entry-point name; the full name is
    /// `{prefix}_{lattice}_{precision}`, e.g. `stream_collide_ep_d3q19_f32`.
    pub const fn prefix(self) -> &'static str {
        match self {
            KernelKind::StreamCollideEsoteric => "stream_collide_ep",
            KernelKind::StreamCollideTwoLattice => "stream_collide_ab",
            KernelKind::InitEquilibrium => "init_equilibrium",
            KernelKind::Fields => "fields",
        }
    }
}

/// Name of the lattice-independent layout-check kernel.
pub const LAYOUT_PROBE_KERNEL: &str = "layout_probe";
