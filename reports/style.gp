# reports/style.gp: the style every plot script of `harness report` starts with. Embedded into
# the harness at build time (CMakeLists.txt, reports/embed.cmake): edit it here, then rebuild.
# Line styles: 1 the run under test, 2 its baseline, 3 the tolerance band (docs/report.md).
set encoding utf8
set termoption noenhanced
set grid
set key outside bottom center
set style line 1 lc rgb '#cc2222' lw 1
set style line 2 lc rgb '#88aaff' lw 3
set style line 3 lc rgb '#44aa44' lw 1
