# Packages the exported accelerator as a Vivado IP (untested: the machines brainsmith is
# tested on have no Vivado). From this folder's parent:
#   vivado -mode batch -source vivado/package_ip.tcl
set root [file dirname [file dirname [file normalize [info script]]]]
set part "@PART@"
create_project -force brainsmith_ip [file join $root vivado project] -part $part
set sources {}
foreach line [split [read [open [file join $root rtl files.f]]] "\n"] {
    if {[string trim $line] ne ""} { lappend sources [file join $root $line] }
}
add_files -norecurse $sources
set memories [glob -nocomplain -directory [file join $root data] */*.dat]
if {[llength $memories]} {
    add_files -norecurse $memories
    set_property file_type {Memory Initialization Files} [get_files $memories]
}
set_property top @TOP@ [current_fileset]
update_compile_order -fileset sources_1
ipx::package_project -root_dir [file join $root vivado ip] -vendor brainsmith.dev \
    -library user -taxonomy /UserIP -import_files -set_current true
ipx::infer_bus_interfaces xilinx.com:interface:axis_rtl:1.0 [ipx::current_core]
ipx::associate_bus_interfaces -busif in0_V -clock ap_clk [ipx::current_core]
ipx::associate_bus_interfaces -busif out0_V -clock ap_clk [ipx::current_core]
set_property core_revision 1 [ipx::current_core]
ipx::create_xgui_files [ipx::current_core]
ipx::save_core [ipx::current_core]
puts "packaged @TOP@ for $part in [file join $root vivado ip]"
